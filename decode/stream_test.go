package decode

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/reassembly"
)

// feedChunks feeds both streams to sd, alternating directions, in chunks
// chosen by size.
func feedChunks(sd *StreamDecoder, c *reassembly.Conn, s [2][]byte, size func() int) {
	sd.Open(c)
	pos := [2]int{}
	ts := c.FirstSeen
	for pos[0] < len(s[0]) || pos[1] < len(s[1]) {
		for d := 0; d < 2; d++ {
			if pos[d] >= len(s[d]) {
				continue
			}
			n := min(size(), len(s[d])-pos[d])
			// Hand over a private copy that is clobbered afterwards, to
			// catch any use of data after the call.
			chunk := append([]byte(nil), s[d][pos[d]:pos[d]+n]...)
			ts = ts.Add(time.Millisecond)
			sd.Data(c, reassembly.Dir(d), chunk, ts)
			for i := range chunk {
				chunk[i] = 0xA5
			}
			pos[d] += n
		}
	}
	sd.Close(c, reassembly.CloseFIN, ts)
}

func checkBalanced(t *testing.T, r *recorder) {
	t.Helper()
	closes := r.eventsOf(EventClose)
	if len(closes) == 0 {
		t.Fatal("no close event")
	}
	for _, e := range closes {
		for d, s := range e.Stats {
			if !s.Balanced() {
				t.Errorf("dir %d not balanced: %s (pending %d)", d, s, s.Pending())
			}
		}
	}
}

// TestStreamVectors frames the real streams whatever the read sizes.
func TestStreamVectors(t *testing.T) {
	s := vectorStreams(t)
	sizes := map[string]func() int{
		"whole": func() int { return 1 << 30 },
		"1":     func() int { return 1 },
		"7":     func() int { return 7 },
		"1460":  func() int { return 1460 },
		"rand":  func() func() int { r := rand.New(rand.NewSource(1)); return func() int { return 1 + r.Intn(100) } }(),
	}
	for name, size := range sizes {
		t.Run(name, func(t *testing.T) {
			r := &recorder{}
			sd := NewStreamDecoder(r, Options{Retain: true, KeepRaw: true})
			feedChunks(sd, testConn(true), s, size)
			if len(r.frames) != 124 {
				t.Errorf("%d frames, want 124", len(r.frames))
			}
			if ps := r.problems(); len(ps) != 0 {
				t.Errorf("problems: %v", ps)
			}
			var off [2]int64
			for i, f := range r.frames {
				if f.N != i+1 {
					t.Errorf("frame %d numbered %d", i+1, f.N)
				}
				if f.Offset != off[f.Dir] {
					t.Errorf("frame %d offset %d, want %d", f.N, f.Offset, off[f.Dir])
				}
				if !bytes.Equal(f.Raw, s[f.Dir][f.Offset:f.Offset+int64(f.Size)]) {
					t.Errorf("frame %d raw differs", f.N)
				}
				off[f.Dir] += int64(f.Size)
			}
			checkBalanced(t, r)
			st := r.eventsOf(EventClose)[0].Stats
			if st[0].Seen != int64(len(s[0])) || st[1].InFrames != int64(len(s[1])) {
				t.Errorf("stats %v", st)
			}
			if tot := sd.Totals(); tot.Frames != 124 || !tot.Balanced() {
				t.Errorf("totals %s", tot)
			}
		})
	}
}

// summarySink records a text summary of each frame during the call, for
// checking the reusing (non-Retain) mode against the Retain mode.
type summarySink struct{ out []string }

func (s *summarySink) Frame(f *Frame) {
	var ents []string
	for _, e := range f.Entries {
		ents = append(ents, fmt.Sprintf("%d:%q", e.Metadata.GetPayloadSize(), e.Payload))
	}
	s.out = append(s.out, fmt.Sprintf("%d %s %d %v %q %q %v %v %x", f.N, f.Type, f.Offset, f.Command, f.Payload, f.Uncompressed, ents, f.Problems, f.Raw))
}
func (s *summarySink) Event(e *Event) {
	s.out = append(s.out, fmt.Sprintf("%s %d %d %v", e.Kind, e.Offset, e.Bytes, e.Problems))
}

func TestStreamReuseMatchesRetain(t *testing.T) {
	s := vectorStreams(t)
	// Add batched, compressed traffic so that Entries and buffers are reused.
	for _, codec := range allCodecs {
		s[0] = append(s[0], batchFrame(t, codec, 5, 0)...)
	}
	var got [2][]string
	for i, retain := range []bool{false, true} {
		r := rand.New(rand.NewSource(2))
		ss := &summarySink{}
		sd := NewStreamDecoder(ss, Options{Retain: retain, KeepRaw: true})
		feedChunks(sd, testConn(true), s, func() int { return 1 + r.Intn(300) })
		got[i] = ss.out
	}
	if len(got[0]) != len(got[1]) {
		t.Fatalf("reuse gave %d outputs, retain %d", len(got[0]), len(got[1]))
	}
	for i := range got[0] {
		if got[0][i] != got[1][i] {
			t.Fatalf("output %d differs:\nreuse:  %.400s\nretain: %.400s", i, got[0][i], got[1][i])
		}
	}
}

func TestStreamTLS(t *testing.T) {
	r := &recorder{}
	sd := NewStreamDecoder(r, Options{Retain: true})
	c := testConn(true)
	c.TLS = true
	sd.Open(c)
	sd.Data(c, reassembly.ClientToServer, []byte{0x16, 3, 1, 0, 5, 1, 2, 3, 4, 5}, c.FirstSeen)
	sd.Gap(c, reassembly.ServerToClient, 100, c.FirstSeen)
	sd.Close(c, reassembly.CloseRST, c.FirstSeen)
	if fmt.Sprint(r.seq) != "[E:open E:tls E:close]" {
		t.Errorf("sequence %v", r.seq)
	}
	st := r.events[2].Stats
	if st[0].Ignored != 10 || !st[0].Balanced() || st[1].Lost != 100 || r.events[2].Detail != "rst" {
		t.Errorf("stats %v detail %q", st, r.events[2].Detail)
	}
}

// TestSinkPanicPropagates: a panic of the Sink is not a decoder-panic
// problem; it reaches the caller of Data, as with the parallel decoder
// (whose Wait re-raises it).
func TestSinkPanicPropagates(t *testing.T) {
	s := vectorStreams(t)
	sd := NewStreamDecoder(&panicSink{}, Options{})
	defer func() {
		if r := recover(); r != "sink bug" {
			t.Fatalf("recovered %v, want the sink's panic", r)
		}
	}()
	feedChunks(sd, testConn(true), s, func() int { return 1460 })
	t.Fatal("the sink's panic did not reach the caller")
}

// TestSinkPanicThenDecoding: a Sink panic raised outside Data's rescue
// (on the open event of a new connection) and recovered by the caller
// leaves no stale mark: the next Data clears it, so a later decoding panic
// would still be rescued as a decoder-panic problem, and frames go on.
func TestSinkPanicThenDecoding(t *testing.T) {
	s := vectorStreams(t)
	ps := &panicOnce{}
	sd := NewStreamDecoder(ps, Options{})
	c := testConn(true)
	func() {
		defer func() { recover() }()
		sd.Data(c, 0, s[0][:200], time.Time{})
	}()
	if !ps.panicked {
		t.Fatal("the sink did not panic")
	}
	sd.Data(c, 0, nil, time.Time{})
	if sd.inSink {
		t.Fatal("the mark of the Sink's panic is still set in the next Data")
	}
	sd.Data(c, 0, s[0][200:], time.Time{})
	if ps.frames == 0 {
		t.Fatal("no frame after the recovered panic")
	}
}

// panicOnce panics on its first event (a connection's open) only.
type panicOnce struct {
	panicked bool
	frames   int
}

func (p *panicOnce) Frame(*Frame) { p.frames++ }
func (p *panicOnce) Event(*Event) {
	if !p.panicked {
		p.panicked = true
		panic("sink bug once")
	}
}
