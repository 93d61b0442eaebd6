package capture

import (
	"io"
	"sync/atomic"
	"unsafe"
)

// ReadBuffers are the buffers a classic pcap file is read into, which the
// records Source.Next returns lie in: a consumer may keep one unchanged
// after the packet that lies in it (Owner, Hold, Release) instead of
// copying what it needs out of it. decode.ParallelStreamDecoder so queues
// the frames of a packet for its workers without copying them
// (docs/architecture.md).
//
// Owner and Hold are called on the goroutine that reads the Source;
// Release on any goroutine. A buffer held is not written again until
// every Hold of it has been released; the reader then takes another one
// (at most maxChunks of them; beyond, a scratch buffer that Owner never
// names: its bytes must be copied).
type ReadBuffers struct {
	src    io.Reader
	size   int                     // of a chunk
	chunks [maxChunks]*readBuf     // allocated as needed; an id is an index
	n      int                     // chunks allocated
	spare  *readBuf                // scratch: never held
	cur    *readBuf                // the chunk the unread bytes lie in
	r, w   int                     // unread bytes: cur.buf[r:w]
	err    error                   // the read error that ends the unread bytes
	empty  int                     // consecutive reads that returned nothing
	held   [maxChunks]atomic.Int32 // Holds not released, by chunk
	step   int                     // what a read asks for, at least
}

// readStep is what one read of a file asks for (at least): a read(2) of
// a plain file is a copy on the reading goroutine, during which it queues
// no frames; 2 MiB at once left the decoding workers idle for a while (a
// runtime trace of bulk500: workers waiting for work 75 ms each, 27 ms
// with reads of 128 KiB).
const readStep = 128 << 10

// maxChunks bounds the chunks a ReadBuffers allocates: what the batches in
// flight of a decode.ParallelStreamDecoder (six to eight of at most
// 64 KiB) hold lies in two of them, mostly.
const maxChunks = 4

type readBuf struct {
	buf []byte
	id  int // -1: the scratch chunk
}

// newReadBuffers reads from src in chunks of size bytes, step bytes (or
// what a Peek needs) at a time.
func newReadBuffers(src io.Reader, size, step int) *ReadBuffers {
	c := &ReadBuffers{src: src, size: size, step: step}
	c.cur = c.alloc()
	return c
}

// alloc returns a new chunk (the scratch one beyond maxChunks).
func (c *ReadBuffers) alloc() *readBuf {
	if c.n == maxChunks {
		if c.spare == nil {
			c.spare = &readBuf{buf: make([]byte, c.size), id: -1}
		}
		return c.spare
	}
	ch := &readBuf{buf: make([]byte, c.size), id: c.n}
	c.chunks[c.n] = ch
	c.n++
	return ch
}

// Size is the longest Peek.
func (c *ReadBuffers) Size() int { return c.size }

// Peek returns the next n bytes (n <= Size) without consuming them, as
// bufio.Reader.Peek: fewer, with the error that stopped the reading, at
// the end of input. They are valid until the next Peek, Read or Discard.
func (c *ReadBuffers) Peek(n int) ([]byte, error) {
	for c.w-c.r < n && c.err == nil {
		c.fill(n)
	}
	if c.w-c.r < n {
		return c.cur.buf[c.r:c.w], c.err
	}
	return c.cur.buf[c.r : c.r+n], nil
}

// Discard skips the next n bytes, which Peek returned.
func (c *ReadBuffers) Discard(n int) {
	c.r += min(n, c.w-c.r)
}

// Read reads the unread bytes, then (as bufio.Reader.Read with an empty
// buffer) straight from the input.
func (c *ReadBuffers) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.r == c.w {
		if c.err != nil {
			return 0, c.readErr()
		}
		n, err := c.src.Read(p)
		if n < 0 || n > len(p) {
			return 0, io.ErrNoProgress
		}
		return n, err
	}
	n := copy(p, c.cur.buf[c.r:c.w])
	c.r += n
	return n, nil
}

// readErr returns the sticky error once, as bufio does.
func (c *ReadBuffers) readErr() error {
	err := c.err
	c.err = nil
	return err
}

// fill reads more input so that n bytes may be unread, moving the unread
// bytes to the start of a chunk first if n would not fit after them: of
// the current chunk unless it is held (another one then, or the scratch
// chunk).
func (c *ReadBuffers) fill(n int) {
	if c.r+n > len(c.cur.buf) || c.w == len(c.cur.buf) {
		dst := c.cur
		if dst.id >= 0 && c.held[dst.id].Load() > 0 {
			dst = c.free()
		}
		c.w = copy(dst.buf, c.cur.buf[c.r:c.w])
		c.r, c.cur = 0, dst
	}
	end := min(len(c.cur.buf), c.w+max(c.step, n-(c.w-c.r)))
	m, err := c.src.Read(c.cur.buf[c.w:end])
	if m < 0 || m > end-c.w {
		m, err = 0, io.ErrNoProgress
	}
	c.w += m
	switch {
	case err != nil:
		c.err = err
	case m > 0:
		c.empty = 0
	default:
		if c.empty++; c.empty >= 100 { // bufio's maxConsecutiveEmptyReads
			c.err = io.ErrNoProgress
		}
	}
}

// free returns a chunk other than the current one that no one holds.
func (c *ReadBuffers) free() *readBuf {
	for i := 0; i < c.n; i++ {
		if ch := c.chunks[i]; ch != c.cur && c.held[i].Load() == 0 {
			return ch
		}
	}
	return c.alloc()
}

// Owner reports which buffer b lies in; ok is false when it lies in none
// that may be held (the bytes must then be copied).
func (c *ReadBuffers) Owner(b []byte) (id int, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if ch := c.cur; ch.id >= 0 && within(ch.buf, p, len(b)) {
		return ch.id, true
	}
	for i := 0; i < c.n; i++ {
		if within(c.chunks[i].buf, p, len(b)) {
			return i, true
		}
	}
	return 0, false
}

// within reports whether the n bytes at p lie in buf.
func within(buf []byte, p uintptr, n int) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= start && p-start <= uintptr(len(buf)) && uintptr(n) <= uintptr(len(buf))-(p-start)
}

// Hold keeps buffer id unchanged until a matching Release.
func (c *ReadBuffers) Hold(id int) { c.held[id].Add(1) }

// Release ends one Hold of buffer id.
func (c *ReadBuffers) Release(id int) {
	if c.held[id].Add(-1) < 0 {
		panic("capture: ReadBuffers.Release without Hold")
	}
}
