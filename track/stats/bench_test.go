package stats

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/internal/cputime"
	"github.com/pulsarscope/pulsarscope/internal/replay"
	"github.com/pulsarscope/pulsarscope/track"
)

// benchPcapEnv names a capture (typically big, not committed) that
// BenchmarkStatsFrame replays in addition to the committed ones.
const benchPcapEnv = "PULSARSCOPE_BENCH_PCAP"

// tape is a capture's decoded frames and events, in order, replayed
// without capture, reassembly or decoding cost so that only the tracker
// and the collector are measured.
type tape struct {
	items  []tapeItem
	frames int
	// rec is the reassembled stream's calls, to replay through a
	// decoder.
	rec *replay.Recording
}

// statsDecode is how 'pulsarscope stats' decodes (cli.statsDecoding).
var statsDecode = decode.Options{LazyEntryMetadata: true, SkipPayloadContents: true}

type tapeItem struct {
	f *decode.Frame
	e *decode.Event
}

// payloadZeros backs the recorded payloads: neither the tracker nor the
// collector reads payload bytes, only their length, so recorded frames
// share one buffer instead of keeping a copy of every payload.
var payloadZeros []byte

func (t *tape) Frame(f *decode.Frame) {
	if n := len(f.Payload); n > 0 {
		if n > len(payloadZeros) {
			payloadZeros = make([]byte, max(n, 1<<20))
		}
		f.Payload = payloadZeros[:n:n]
	}
	t.items = append(t.items, tapeItem{f: f})
	t.frames++
}

func (t *tape) Event(e *decode.Event) { t.items = append(t.items, tapeItem{e: e}) }

// recordTape reassembles a capture, keeping the calls, and decodes them
// as 'pulsarscope stats' does, keeping every frame and event
// (decode.Options.Retain).
func recordTape(b *testing.B, path string) *tape {
	r, err := replay.Record(path)
	if err != nil {
		b.Fatal(err)
	}
	t := &tape{rec: r}
	opts := statsDecode
	opts.Retain = true
	t.decode(t, opts)
	if t.frames == 0 {
		b.Fatalf("%s: no Pulsar frame", path)
	}
	return t
}

// decode replays the reassembled calls through a decoder into sink.
func (t *tape) decode(sink decode.Sink, opts decode.Options) {
	t.rec.Replay(decode.NewStreamDecoder(sink, opts))
}

func (t *tape) replay(sink track.Sink) *track.Tracker {
	tr := track.New(sink, track.Options{})
	for _, it := range t.items {
		if it.f != nil {
			tr.Frame(it.f)
		} else {
			tr.Event(it.e)
		}
	}
	return tr
}

type nopDecodeSink struct{}

func (nopDecodeSink) Frame(*decode.Frame) {}
func (nopDecodeSink) Event(*decode.Event) {}

type nopSink struct{}

func (nopSink) Frame(*decode.Frame, *track.Info) {}
func (nopSink) Event(*decode.Event)              {}
func (nopSink) Finding(*track.Finding)           {}

// benchCaptures returns the captures BenchmarkStatsFrame replays: two
// committed ones and, when PULSARSCOPE_BENCH_PCAP names one, that one. A
// named file that cannot be read is an error, not a silent skip.
func benchCaptures(b *testing.B) []string {
	paths := []string{
		filepath.Join("..", "..", "testdata", "pcaps", "many.pcap"),
		filepath.Join("..", "..", "testdata", "pcaps", "subscriptions.pcap"),
	}
	if p := os.Getenv(benchPcapEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			b.Fatalf("%s: %v", benchPcapEnv, err)
		}
		paths = append(paths, p)
	}
	return paths
}

// BenchmarkStatsFrame measures the per-frame CPU of 'pulsarscope stats'
// beyond decoding: decoded frames replayed through the tracker alone
// (track) and through the tracker and the Collector, Report included
// (track+stats). On a capture too big for the CPU caches the replay also
// measures memory latency (each recorded frame is cold), which the real
// pipeline does not pay: decode and decode+track+stats replay the
// reassembled bytes through the decoder alone and through decoder,
// tracker and Collector, as the command runs them (on one goroutine);
// their difference is the cost with the frame in cache. ns/frame is wall
// time; cpu-ns/frame is the CPU time of the process (GC included), robust
// on a busy machine. Set PULSARSCOPE_BENCH_PCAP to add a big capture.
func BenchmarkStatsFrame(b *testing.B) {
	for _, path := range benchCaptures(b) {
		t := recordTape(b, path)
		for _, bc := range []struct {
			name string
			run  func()
		}{
			{"track", func() { t.replay(nopSink{}) }},
			{"track+stats", func() {
				c := New()
				t.replay(c)
				c.Report()
			}},
			{"decode", func() { t.decode(nopDecodeSink{}, statsDecode) }},
			{"decode+track+stats", func() {
				c := New()
				t.decode(track.New(c, track.Options{}), statsDecode)
				c.Report()
			}},
		} {
			b.Run(filepath.Base(path)+"/"+bc.name, func(b *testing.B) {
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				b.ResetTimer()
				c0 := cputime.Now()
				for i := 0; i < b.N; i++ {
					bc.run()
				}
				cpu := cputime.Now() - c0
				b.StopTimer()
				runtime.ReadMemStats(&m1)
				frames := float64(b.N) * float64(t.frames)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/frames, "ns/frame")
				b.ReportMetric(float64(cpu.Nanoseconds())/frames, "cpu-ns/frame")
				b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/frames, "allocs/frame")
				b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/frames, "B/frame")
			})
		}
	}
}
