package tui

import (
	"fmt"
	"os"
	"sync"
)

// spillTail is the size of the in-memory tail of a spill file: frames are
// appended to it and written to the file when it fills up.
const spillTail = 1 << 20

// spill is an append-only store of frame bytes in a temporary file. Writes
// come from the decoding goroutine and reads from the UI; both are safe to
// call concurrently.
type spill struct {
	mu   sync.Mutex
	f    *os.File
	size int64  // bytes in the file
	tail []byte // bytes after the file's end, not yet written
	err  error
}

// newSpill creates the spill file in dir ("" for the system's temporary
// directory). The file is unlinked at once where the OS allows it, so it
// disappears even if the process dies.
func newSpill(dir string) (*spill, error) {
	f, err := os.CreateTemp(dir, "pulsarscope-tui-*.spill")
	if err != nil {
		return nil, fmt.Errorf("creating the spill file: %w", err)
	}
	// On Unix the open file stays usable after it is removed.
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("unlinking the spill file: %w", err)
	}
	return &spill{f: f, tail: make([]byte, 0, spillTail)}, nil
}

// append stores b and returns its offset.
func (s *spill) append(b []byte) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	off := s.size + int64(len(s.tail))
	if len(s.tail)+len(b) > cap(s.tail) {
		s.flushLocked()
	}
	if len(b) > cap(s.tail) {
		s.writeLocked(b)
		return off
	}
	s.tail = append(s.tail, b...)
	return off
}

func (s *spill) flushLocked() {
	if len(s.tail) == 0 {
		return
	}
	s.writeLocked(s.tail)
	s.tail = s.tail[:0]
}

func (s *spill) writeLocked(b []byte) {
	if s.err == nil {
		if _, err := s.f.WriteAt(b, s.size); err != nil {
			s.err = fmt.Errorf("writing the spill file: %w", err)
		}
	}
	s.size += int64(len(b))
}

// read returns n bytes at off in dst (grown as needed).
func (s *spill) read(dst []byte, off int64, n int) ([]byte, error) {
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if off >= s.size {
		copy(dst, s.tail[off-s.size:])
		return dst, nil
	}
	if _, err := s.f.ReadAt(dst, off); err != nil {
		return nil, fmt.Errorf("reading the spill file: %w", err)
	}
	return dst, nil
}

// bytes returns the number of bytes stored.
func (s *spill) bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size + int64(len(s.tail))
}

// close closes (and so frees) the spill file.
func (s *spill) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Close()
}
