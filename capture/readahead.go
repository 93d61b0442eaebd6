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

	cur  chunk
	off  int
	done bool
}

type chunk struct {
	b   []byte
	err error
}

func newReadAhead(r io.Reader) *readAhead {
	ra := &readAhead{
		full: make(chan chunk, readAheadChunks),
		free: make(chan []byte, readAheadChunks),
		stop: make(chan struct{}),
		gone: make(chan struct{}),
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
		n, err := readFull(r, buf)
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
		if ra.done {
			return 0, ra.cur.err
		}
		if ra.cur.b != nil {
			ra.free <- ra.cur.b[:cap(ra.cur.b)] // never blocks: it came from free
		}
		ra.cur, ra.off = <-ra.full, 0
		ra.done = ra.cur.err != nil
		if ra.done && len(ra.cur.b) == 0 {
			return 0, ra.cur.err
		}
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

// readFull reads into buf until it is full or r returns an error, which
// it returns as is (io.ReadFull would turn a short io.EOF into
// io.ErrUnexpectedEOF, which gzip returns for a truncated stream).
func readFull(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
