package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
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

// TestReadAheadFiles: a gzip capture file large enough to be read ahead,
// and the same capture on a stream of unknown size, read exactly like the
// plain file.
func TestReadAheadFiles(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var recs []rec
	for i := 0; i < 1500; i++ {
		p := make([]byte, 1000)
		r.Read(p) // incompressible: the gzip file is over a chunk
		s := tcpSeg(string(p))
		s.seq = uint32(1000 + 1000*i)
		recs = append(recs, rec{ts: t0, data: frameBytes(t, LinkTypeEthernet, s)})
	}
	plain := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, recs)
	dir := t.TempDir()
	read := func(name string, open func() (*Source, error)) []got {
		src, err := open()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer src.Close()
		wantAhead := !strings.HasPrefix(name, "plain")
		if fr, ok := src.raw.(*fileRaw); !ok || (fr.ra != nil) != wantAhead || (fr.ra != nil && fr.ra.whole != strings.Contains(name, "file")) {
			t.Fatalf("%s: read ahead %v, want %v (whole chunks for files)", name, ok && fr.ra != nil, wantAhead)
		}
		pkts, err := readAll(t, src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return pkts
	}
	byPath := func(name string, data []byte) func() (*Source, error) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return func() (*Source, error) { return Open(path) }
	}
	compressed := gz(t, plain)
	if len(compressed) < readBufferSize {
		t.Fatalf("gzip capture of %d bytes: too small to be read ahead", len(compressed))
	}
	want := read("plain", byPath("plain.pcap", plain))
	if len(want) != len(recs) {
		t.Fatalf("%d packets, want %d", len(want), len(recs))
	}
	// A file behind a wrapper (the progress bar's byte counter) with the
	// file as its closer is still a file.
	wrapped := func(path string) func() (*Source, error) {
		return func() (*Source, error) {
			f, err := os.Open(filepath.Join(dir, path))
			if err != nil {
				return nil, err
			}
			raw, err := NewFileReader(path, struct{ io.Reader }{f}, f)
			if err != nil {
				return nil, err
			}
			return NewSource(path, raw), nil
		}
	}
	for name, open := range map[string]func() (*Source, error){
		"plain file, wrapped": wrapped("plain.pcap"),
		"gzip file, wrapped":  wrapped("c.pcap.gz"),
		"gzip file":           byPath("c.pcap.gz", compressed),
		"gzip stream":         func() (*Source, error) { return OpenReader("s", struct{ io.Reader }{bytes.NewReader(compressed)}) },
		"stream":              func() (*Source, error) { return OpenReader("s", struct{ io.Reader }{bytes.NewReader(plain)}) },
	} {
		got := read(name, open)
		if len(got) != len(want) {
			t.Fatalf("%s: %d packets, want %d", name, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: packet %d differs", name, i)
			}
		}
	}
}
