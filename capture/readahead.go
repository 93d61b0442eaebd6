package capture

import (
	"io"
	"sync"
)

// Read-ahead of large inputs: one goroutine reads (and for gzip inputs
// decompresses) the next chunks while the caller's goroutine parses
// packets, so that the read(2) copies and inflating run on another core.
const (
	readAheadChunk  = 1 << 20 // bytes a chunk
	readAheadChunks = 4       // chunks in flight: at most 4 MiB buffered
)

// readAhead is an io.Reader over r whose reads are done in advance by its
// own goroutine. Errors of r (io.EOF included) are returned after the
// bytes read before them. Close stops the goroutine (it may finish a read
// of r in progress first); a readAhead is not safe for concurrent use.
type readAhead struct {
	full chan chunk
	free chan []byte
	stop chan struct{}
	once sync.Once
	gone chan struct{} // closed when the goroutine has returned

	cur   chunk
	off   int
	whole bool // fill chunks before passing them on
}

type chunk struct {
	b   []byte
	err error
}

// newReadAhead starts reading r ahead. whole fills each chunk before it is
// passed on (for files); otherwise each read's bytes go on at once.
func newReadAhead(r io.Reader, whole bool) *readAhead {
	ra := &readAhead{
		whole: whole,
		full:  make(chan chunk, readAheadChunks),
		free:  make(chan []byte, readAheadChunks),
		stop:  make(chan struct{}),
		gone:  make(chan struct{}),
	}
	for i := 0; i < readAheadChunks; i++ {
		ra.free <- make([]byte, readAheadChunk)
	}
	go ra.fill(r)
	return ra
}

func (ra *readAhead) fill(r io.Reader) {
	defer close(ra.gone)
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		case <-ra.stop:
			return
		}
		n, err := r.Read(buf)
		// Whole chunks (fewer hand-offs) unless bytes must go on as they
		// come: a pipe fed live (tcpdump -U -w - | pulsarscope read -).
		for ra.whole && n < len(buf) && err == nil {
			var m int
			m, err = r.Read(buf[n:])
			n += m
		}
		if n == 0 && err == nil {
			ra.free <- buf // never blocks: it came from free
			continue
		}
		select {
		case ra.full <- chunk{b: buf[:n], err: err}:
		case <-ra.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (ra *readAhead) Read(p []byte) (int, error) {
	for ra.off == len(ra.cur.b) {
		if ra.cur.err != nil { // the last chunk, read to its end
			return 0, ra.cur.err
		}
		if ra.cur.b != nil {
			ra.free <- ra.cur.b[:cap(ra.cur.b)] // never blocks: it came from free
		}
		ra.cur, ra.off = <-ra.full, 0
	}
	n := copy(p, ra.cur.b[ra.off:])
	ra.off += n
	return n, nil
}

// Close stops the reading goroutine. It does not close r.
func (ra *readAhead) Close() error {
	ra.once.Do(func() { close(ra.stop) })
	return nil
}
