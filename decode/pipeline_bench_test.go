package decode

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// benchPcap is the capture BenchmarkPipeline reads: $PULSARSCOPE_BENCH_PCAP,
// else the largest committed capture.
func benchPcap(testing.TB) string {
	if p := os.Getenv("PULSARSCOPE_BENCH_PCAP"); p != "" {
		return p
	}
	return "../testdata/pcaps/many.pcap"
}

// runPipeline runs the whole read path (capture, reassembly, decode) on
// one file into sink, like cli's runSource.
func runPipeline(name string, sink Sink, opts Options) error {
	src, err := capture.Open(name)
	if err != nil {
		return err
	}
	defer src.Close()
	sd := NewStreamDecoder(sink, opts)
	return reassembly.New(sd, reassembly.Options{}).Run(context.Background(), src)
}

// benchPipeline reports MB/s of capture file and allocations per frame.
func benchPipeline(b *testing.B, opts Options) {
	benchPipelineWith(b, opts, runPipeline)
}

func benchPipelineWith(b *testing.B, opts Options, run func(string, Sink, Options) error) {
	name := benchPcap(b)
	fi, err := os.Stat(name)
	if err != nil {
		b.Skip(err)
	}
	sink := &nopSink{}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := run(name, sink, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	if sink.frames > 0 {
		b.ReportMetric(float64(sink.frames)/float64(b.N), "frames/op")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(sink.frames), "allocs/frame")
	}
}

// BenchmarkPipeline: capture file → reassembly → decode → a sink that
// keeps nothing, with the options of 'read -q'.
func BenchmarkPipeline(b *testing.B) {
	benchPipeline(b, Options{LazyEntryMetadata: true})
}

// BenchmarkPipelineEager: the same with every entry's metadata decoded
// (what text and JSON output need).
func BenchmarkPipelineEager(b *testing.B) {
	benchPipeline(b, Options{})
}

// BenchmarkPipelineParallel: BenchmarkPipeline with a ParallelStreamDecoder
// (GOMAXPROCS workers), as the cli runs it.
func BenchmarkPipelineParallel(b *testing.B) {
	benchPipelineWith(b, Options{LazyEntryMetadata: true}, func(name string, s Sink, o Options) error {
		return runParallelPipeline(name, s, o, 0, false)
	})
}
