package track

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/internal/cputime"
	"github.com/pulsarscope/pulsarscope/internal/replay"
)

func record(b *testing.B, name string) *replay.Recording {
	r, err := replay.Record(filepath.Join("../testdata/pcaps", name))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

type nopDecodeSink struct{}

func (nopDecodeSink) Frame(*decode.Frame) {}
func (nopDecodeSink) Event(*decode.Event) {}

type nopSink struct{}

func (nopSink) Frame(*decode.Frame, *Info) {}
func (nopSink) Event(*decode.Event)        {}
func (nopSink) Finding(*Finding)           {}

// BenchmarkDecode and BenchmarkDecodeTrack replay the same capture through
// the decoder alone and through decoder + tracker: tracking must add at
// most 20%.
func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"many.pcap", "subscriptions.pcap"} {
		r := record(b, name)
		b.Run(name+"/decode", func(b *testing.B) {
			b.SetBytes(r.Bytes)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sd := decode.NewStreamDecoder(nopDecodeSink{}, decode.Options{})
				r.Replay(sd)
			}
		})
		b.Run(name+"/decode+track", func(b *testing.B) {
			b.SetBytes(r.Bytes)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sd := decode.NewStreamDecoder(New(nopSink{}, Options{}), decode.Options{})
				r.Replay(sd)
			}
		})
	}
}

// BenchmarkTrackOverhead measures what BenchmarkDecode compares, robustly
// on a busy machine: each iteration replays the capture through the
// decoder alone and through decoder + tracker, alternating which goes
// first, so both see the same load. overhead-% is the extra wall time of
// tracking, cpu-overhead-% the extra CPU time of the process (GC included,
// time spent waiting for a CPU excluded); the aim is at most 20.
func BenchmarkTrackOverhead(b *testing.B) {
	for _, name := range []string{"many.pcap", "subscriptions.pcap"} {
		r := record(b, name)
		b.Run(name, func(b *testing.B) {
			var plain, tracked, plainCPU, trackedCPU time.Duration
			run := func(sink decode.Sink, wall, cpu *time.Duration) {
				t0, c0 := time.Now(), cputime.Now()
				sd := decode.NewStreamDecoder(sink, decode.Options{})
				r.Replay(sd)
				*cpu += cputime.Now() - c0
				*wall += time.Since(t0)
			}
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					run(nopDecodeSink{}, &plain, &plainCPU)
					run(New(nopSink{}, Options{}), &tracked, &trackedCPU)
				} else {
					run(New(nopSink{}, Options{}), &tracked, &trackedCPU)
					run(nopDecodeSink{}, &plain, &plainCPU)
				}
			}
			b.ReportMetric(100*(float64(tracked)/float64(plain)-1), "overhead-%")
			b.ReportMetric(100*(float64(trackedCPU)/float64(plainCPU)-1), "cpu-overhead-%")
		})
	}
}
