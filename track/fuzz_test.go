package track_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/internal/fuzzseed"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// chunkRecorder turns the reassembled streams of a capture's first
// connection into the fuzz input format of FuzzTracker: records of
// [flags, len hi, len lo, bytes...], flags bit 0 the direction, bit 1 a
// gap of len bytes (no bytes follow), bits 2-7 the seconds to advance the
// capture clock by.
type chunkRecorder struct {
	out  []byte
	last time.Time
}

func (r *chunkRecorder) Open(*reassembly.Conn)                                     {}
func (r *chunkRecorder) Close(*reassembly.Conn, reassembly.CloseReason, time.Time) {}
func (r *chunkRecorder) Gap(c *reassembly.Conn, d reassembly.Dir, n int64, ts time.Time) {
	if c.ID == 1 {
		r.out = append(r.out, r.flags(d, ts)|2, byte(min(n, 65535)>>8), byte(min(n, 65535)))
	}
}

func (r *chunkRecorder) Data(c *reassembly.Conn, d reassembly.Dir, b []byte, ts time.Time) {
	if c.ID != 1 {
		return
	}
	for len(b) > 0 {
		n := min(len(b), 65535)
		r.out = append(r.out, r.flags(d, ts), byte(n>>8), byte(n))
		r.out = append(r.out, b[:n]...)
		b = b[n:]
	}
}

func (r *chunkRecorder) flags(d reassembly.Dir, ts time.Time) byte {
	adv := 0
	if !r.last.IsZero() {
		adv = min(int(ts.Sub(r.last)/time.Second), 63)
	}
	r.last = ts
	return byte(d) | byte(adv)<<2
}

// captureChunks returns the chunk encoding of every lab capture's first
// connection (at most 64 KiB each).
func captureChunks(tb testing.TB) [][]byte {
	files, _ := filepath.Glob("../testdata/pcaps/*.pcap*")
	var seeds [][]byte
	for _, name := range files {
		if filepath.Ext(name) == ".json" {
			continue
		}
		src, err := capture.Open(name)
		if err != nil {
			tb.Fatal(err)
		}
		r := &chunkRecorder{}
		_ = reassembly.New(r, reassembly.Options{}).Run(context.Background(), src)
		src.Close()
		if len(r.out) > 0 {
			seeds = append(seeds, r.out[:min(len(r.out), 64<<10)])
		}
	}
	return seeds
}

type countSink struct{ frames, events, findings int }

func (s *countSink) Frame(f *decode.Frame, info *track.Info) {
	if info == nil {
		panic("frame without info")
	}
	s.frames++
}
func (s *countSink) Event(*decode.Event)       { s.events++ }
func (s *countSink) Finding(fd *track.Finding) { s.findings++ }

// runChunks decodes the chunk stream of one connection into tr.
func runChunks(data []byte, tr decode.Sink, handshake bool) {
	sd := decode.NewStreamDecoder(tr, decode.Options{MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16})
	c := &reassembly.Conn{ID: 1, Client: netip.MustParseAddrPort("10.0.0.1:40000"), Server: netip.MustParseAddrPort("10.0.0.2:6650"),
		FirstSeen: time.Unix(1700000000, 0), HandshakeSeen: handshake}
	sd.Open(c)
	ts := c.FirstSeen
	for len(data) >= 3 {
		fl, n := data[0], int(data[1])<<8|int(data[2])
		data = data[3:]
		ts = ts.Add(time.Duration(fl>>2) * time.Second)
		d := reassembly.Dir(fl & 1)
		if fl&2 != 0 {
			sd.Gap(c, d, int64(n), ts)
			continue
		}
		n = min(n, len(data))
		sd.Data(c, d, data[:n], ts)
		data = data[n:]
	}
	sd.Close(c, reassembly.CloseFIN, ts)
}

// FuzzTracker runs the tracker (pairing, sessions, producers, consumers,
// bounded pending state) on the frames decoded from arbitrary streams of
// one connection, in two passes like 'read -2': no panic, every frame has
// its Info. Small limits make the eviction paths reachable.
func FuzzTracker(f *testing.F) {
	for _, s := range captureChunks(f) {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, handshake bool) {
		opts := track.Options{MaxPending: 4, MaxDelivered: 8, KeepAlive: 5 * time.Second}
		first := opts
		first.Record = true
		tr1 := track.New(&countSink{}, first)
		runChunks(data, tr1, handshake)
		second := opts
		second.Results = tr1.Results()
		sink := &countSink{}
		tr2 := track.New(sink, second)
		runChunks(data, tr2, handshake)
		live := opts
		live.RequestTimeout = 2 * time.Second
		runChunks(data, track.New(&countSink{}, live), handshake)
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzTracker from the lab
// captures (PULSARSCOPE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus).
func TestWriteFuzzCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("PULSARSCOPE_WRITE_CORPUS not set")
	}
	for _, s := range captureChunks(t) {
		if err := fuzzseed.Write("testdata/fuzz/FuzzTracker", s, true); err != nil {
			t.Fatal(err)
		}
	}
}
