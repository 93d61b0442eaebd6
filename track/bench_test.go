package track

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/internal/cputime"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// recorded is a capture's reassembled calls, replayed without capture or
// reassembly cost so that only decoding (and tracking) is measured.
type recorded struct {
	calls []func(h reassembly.Handler)
	bytes int64
}

func (r *recorded) Open(c *reassembly.Conn) {
	r.calls = append(r.calls, func(h reassembly.Handler) { h.Open(c) })
}
func (r *recorded) Data(c *reassembly.Conn, d reassembly.Dir, data []byte, ts time.Time) {
	b := append([]byte(nil), data...)
	r.bytes += int64(len(b))
	r.calls = append(r.calls, func(h reassembly.Handler) { h.Data(c, d, b, ts) })
}
func (r *recorded) Gap(c *reassembly.Conn, d reassembly.Dir, n int64, ts time.Time) {
	r.calls = append(r.calls, func(h reassembly.Handler) { h.Gap(c, d, n, ts) })
}
func (r *recorded) Close(c *reassembly.Conn, why reassembly.CloseReason, ts time.Time) {
	r.calls = append(r.calls, func(h reassembly.Handler) { h.Close(c, why, ts) })
}

func record(b *testing.B, name string) *recorded {
	src, err := capture.Open(filepath.Join("../testdata/pcaps", name))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	r := &recorded{}
	if err := reassembly.New(r, reassembly.Options{Ports: []uint16{6650}}).Run(context.Background(), src); err != nil {
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
			b.SetBytes(r.bytes)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sd := decode.NewStreamDecoder(nopDecodeSink{}, decode.Options{})
				for _, c := range r.calls {
					c(sd)
				}
			}
		})
		b.Run(name+"/decode+track", func(b *testing.B) {
			b.SetBytes(r.bytes)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sd := decode.NewStreamDecoder(New(nopSink{}, Options{}), decode.Options{})
				for _, c := range r.calls {
					c(sd)
				}
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
			replay := func(sink decode.Sink, wall, cpu *time.Duration) {
				t0, c0 := time.Now(), cputime.Now()
				sd := decode.NewStreamDecoder(sink, decode.Options{})
				for _, c := range r.calls {
					c(sd)
				}
				*cpu += cputime.Now() - c0
				*wall += time.Since(t0)
			}
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					replay(nopDecodeSink{}, &plain, &plainCPU)
					replay(New(nopSink{}, Options{}), &tracked, &trackedCPU)
				} else {
					replay(New(nopSink{}, Options{}), &tracked, &trackedCPU)
					replay(nopDecodeSink{}, &plain, &plainCPU)
				}
			}
			b.ReportMetric(100*(float64(tracked)/float64(plain)-1), "overhead-%")
			b.ReportMetric(100*(float64(trackedCPU)/float64(plainCPU)-1), "cpu-overhead-%")
		})
	}
}
