package capture

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"testing"
	"testing/iotest"
)

// TestReadBuffersHold reads records of random lengths from ReadBuffers of
// small chunks, as pcapReader does (Peek, then Discard at the next one),
// holding the chunks of some records and releasing them later in random
// order. Every record must be the input's bytes at its offset, a held
// record must not change until its chunk is released, Owner must name
// exactly the chunks (never the scratch one), and no more than maxChunks
// chunks (plus the scratch one) may be made.
func TestReadBuffersHold(t *testing.T) {
	for _, tc := range []struct {
		name        string
		chunk, step int
		wrap        func(io.Reader) io.Reader
		hold        int // one record in hold is held
	}{
		{"whole reads", 256, 256, func(r io.Reader) io.Reader { return r }, 3},
		{"small steps", 256, 10, func(r io.Reader) io.Reader { return r }, 3},
		{"one byte reads", 256, 256, iotest.OneByteReader, 3},
		{"half reads", 100, 100, iotest.HalfReader, 2},
		{"every record held", 64, 64, func(r io.Reader) io.Reader { return r }, 1},
		{"none held", 64, 1, iotest.DataErrReader, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(tc.chunk + tc.hold)))
			in := make([]byte, 64<<10)
			r.Read(in)
			rb := newReadBuffers(tc.wrap(bytes.NewReader(in)), tc.chunk, tc.step)
			type holding struct {
				id   int
				rec  []byte // in the chunk
				want []byte
				off  int
			}
			var held []holding
			release := func(k int) {
				h := held[k]
				if !bytes.Equal(h.rec, h.want) {
					t.Fatalf("record at %d changed while its chunk %d was held", h.off, h.id)
				}
				rb.Release(h.id)
				held = append(held[:k], held[k+1:]...)
			}
			off, pending, scratch := 0, 0, 0
			for n := 0; ; n++ {
				rb.Discard(pending)
				want := 1 + r.Intn(tc.chunk)
				rec, err := rb.Peek(want)
				if off+want > len(in) {
					if err == nil || !bytes.Equal(rec, in[off:]) {
						t.Fatalf("end: %d bytes, err %v; want the last %d and an error", len(rec), err, len(in)-off)
					}
					break
				}
				if err != nil || !bytes.Equal(rec, in[off:off+want]) {
					t.Fatalf("record %d at %d: %d bytes (err %v), differ from the input", n, off, len(rec), err)
				}
				id, ok := rb.Owner(rec)
				switch {
				case rb.cur.id < 0:
					scratch++
					if ok {
						t.Fatalf("record %d lies in the scratch chunk, Owner says %d", n, id)
					}
				case !ok || id != rb.cur.id:
					t.Fatalf("record %d lies in chunk %d, Owner says %d, %v", n, rb.cur.id, id, ok)
				case n%tc.hold == 0:
					rb.Hold(id)
					held = append(held, holding{id, rec, bytes.Clone(rec), off})
				}
				if _, ok := rb.Owner(bytes.Clone(rec)); ok {
					t.Fatalf("record %d: a copy of it is owned", n)
				}
				for len(held) > 0 && r.Intn(3) == 0 {
					release(r.Intn(len(held)))
				}
				if len(held) > 8 {
					release(0)
				}
				for _, h := range held {
					if !bytes.Equal(h.rec, h.want) {
						t.Fatalf("record at %d changed while its chunk %d was held", h.off, h.id)
					}
				}
				pending, off = want, off+want
			}
			for len(held) > 0 {
				release(0)
			}
			if rb.n > maxChunks {
				t.Errorf("%d chunks made, at most %d", rb.n, maxChunks)
			}
			if tc.hold == 1 && scratch == 0 {
				t.Errorf("the scratch chunk was never used: every chunk held is not tested")
			}
			for i := 0; i < rb.n; i++ {
				if v := rb.held[i].Load(); v != 0 {
					t.Errorf("chunk %d: %d holds left", i, v)
				}
			}
		})
	}
}

// TestReadBuffersRead: Read returns the unread bytes, then reads straight
// from the input, as bufio.Reader.Read does, and the input's error once.
func TestReadBuffersRead(t *testing.T) {
	in := []byte("0123456789abcdefghij")
	rb := newReadBuffers(bytes.NewReader(in), 8, 8)
	if b, err := rb.Peek(4); err != nil || string(b) != "0123" {
		t.Fatalf("Peek: %q, %v", b, err)
	}
	rb.Discard(2)
	var got []byte
	buf := make([]byte, 5)
	for {
		n, err := rb.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != string(in[2:]) {
		t.Errorf("read %q, want %q", got, in[2:])
	}
	if n, err := rb.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("after the end: %d, %v", n, err)
	}
}

// TestReadBuffersReadError: a read error ends Peek's bytes, is returned
// with them, and is not lost.
func TestReadBuffersReadError(t *testing.T) {
	boom := fmt.Errorf("disk on fire")
	rb := newReadBuffers(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom)), 16, 16)
	b, err := rb.Peek(8)
	if string(b) != "abc" || err != boom {
		t.Fatalf("Peek: %q, %v; want abc and the error", b, err)
	}
}
