package capture

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"testing"
	"testing/iotest"
	"time"
)

// TestReadAhead checks readAhead as an io.Reader (iotest.TestReader) over
// inputs of zero, one and several chunks, read whole and one byte at a
// time, and that an error of the underlying reader comes after every byte
// read before it.
func TestReadAhead(t *testing.T) {
	data := make([]byte, 3*readAheadChunk+12345)
	rand.New(rand.NewSource(1)).Read(data)
	boom := errors.New("boom")
	tests := []struct {
		name string
		in   func([]byte) io.Reader
		size int
		err  error // after the bytes; nil: io.EOF
	}{
		{"empty", func(b []byte) io.Reader { return bytes.NewReader(b) }, 0, nil},
		{"small", func(b []byte) io.Reader { return bytes.NewReader(b) }, 100, nil},
		{"one chunk exactly", func(b []byte) io.Reader { return bytes.NewReader(b) }, readAheadChunk, nil},
		{"several chunks", func(b []byte) io.Reader { return bytes.NewReader(b) }, len(data), nil},
		{"one byte reads below", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }, 5000, nil},
		{"data with EOF", func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) }, len(data), nil},
		{"error mid-way", func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b), iotest.ErrReader(boom)) }, readAheadChunk + 7, boom},
		{"unexpected EOF kept", func(b []byte) io.Reader {
			return io.MultiReader(bytes.NewReader(b), iotest.ErrReader(io.ErrUnexpectedEOF))
		}, 10, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		for _, whole := range []bool{true, false} {
			runReadAhead(t, tc.name, tc.in, data[:tc.size], tc.err, whole)
		}
	}
}

// runReadAhead reads want through a readAhead over in(want): the bytes,
// then io.EOF (wantErr nil, checked by iotest.TestReader) or wantErr.
func runReadAhead(t *testing.T, name string, in func([]byte) io.Reader, want []byte, wantErr error, whole bool) {
	if whole {
		name += "/whole"
	}
	t.Run(name, func(t *testing.T) {
		ra := newReadAhead(in(want), whole)
		defer ra.Close()
		if wantErr == nil {
			if err := iotest.TestReader(ra, want); err != nil {
				t.Fatal(err)
			}
			return
		}
		got, err := io.ReadAll(ra)
		if !bytes.Equal(got, want) || !errors.Is(err, wantErr) {
			t.Fatalf("%d bytes, err %v; want %d bytes, %v", len(got), err, len(want), wantErr)
		}
		if n, err := ra.Read(make([]byte, 1)); n != 0 || !errors.Is(err, wantErr) {
			t.Errorf("read after the error: %d, %v", n, err)
		}
	})
}

// TestReadAheadClose: Close stops the goroutine while chunks are unread.
func TestReadAheadClose(t *testing.T) {
	ra := newReadAhead(bytes.NewReader(make([]byte, 10*readAheadChunk)), true)
	if _, err := ra.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	ra.Close()
	ra.Close() // twice is fine
	select {
	case <-ra.gone:
	case <-time.After(time.Minute):
		t.Fatal("the goroutine still runs a minute after Close")
	}
}

// TestReadAheadLive: bytes that arrive on a pipe are passed on at once,
// not held until a chunk is full (a capture fed live on stdin).
func TestReadAheadLive(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ra := newReadAhead(pr, false)
	defer ra.Close()
	go pw.Write([]byte("first packet"))
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 100)
		n, _ := ra.Read(b)
		got <- string(b[:n])
	}()
	select {
	case s := <-got:
		if s != "first packet" {
			t.Fatalf("read %q", s)
		}
	case <-time.After(time.Minute):
		t.Fatal("12 bytes written to the pipe were not passed on")
	}
}
