package decode

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// fullDigestSink is digestSink plus the bytes a frame points to, to catch
// any aliasing of a batch that was reused too early.
type fullDigestSink struct{ digestSink }

func (s *fullDigestSink) Frame(f *Frame) {
	s.digestSink.Frame(f)
	h := crc32.NewIEEE()
	h.Write(f.Raw)
	h.Write([]byte{0})
	h.Write(f.Payload)
	h.Write([]byte{0})
	h.Write(f.Uncompressed)
	for _, e := range f.Entries {
		h.Write(e.Payload)
	}
	cmd := ""
	if f.Command != nil {
		b, _ := detMarshal.Marshal(f.Command)
		cmd = fmt.Sprintf("%x", b)
	}
	md := ""
	if f.Metadata != nil {
		b, _ := detMarshal.Marshal(f.Metadata)
		md = fmt.Sprintf("%x", b)
	}
	s.lines[len(s.lines)-1] += fmt.Sprintf(" conn=%d sum=%v bytes=%08x regions=%v cmd=%s md=%s", f.Conn.ID, f.Checksum, h.Sum32(), f.Regions, cmd, md)
}

func (s *fullDigestSink) Event(e *Event) {
	s.digestSink.Event(e)
	if e.Stats != nil {
		s.lines[len(s.lines)-1] += fmt.Sprintf(" stats=%v", *e.Stats)
	}
	if e.Conn != nil {
		s.lines[len(s.lines)-1] += fmt.Sprintf(" conn=%d", e.Conn.ID)
	}
}

// runParallelPipeline is runPipeline with a ParallelStreamDecoder; tiny
// makes its batches tiny (many batches, all in flight at once).
func runParallelPipeline(name string, sink Sink, opts Options, workers int, tiny bool) error {
	_, err := runParallelPipelineN(name, sink, opts, workers, tiny)
	return err
}

// runParallelPipelineN also returns how many frames were decoded late.
func runParallelPipelineN(name string, sink Sink, opts Options, workers int, tiny bool) (int64, error) {
	src, err := capture.Open(name)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	sd := NewParallelStreamDecoder(sink, opts, workers)
	if tiny {
		sd.maxItems, sd.maxRaw, sd.budget = 3, 200, 300
	}
	if v, err := strconv.Atoi(os.Getenv("PAR_ITEMS")); err == nil {
		sd.maxItems = v
	}
	if v, err := strconv.Atoi(os.Getenv("PAR_RAW")); err == nil {
		sd.maxRaw = v
	}
	err = reassembly.New(sd, reassembly.Options{}).Run(context.Background(), src)
	sd.Wait()
	return sd.deferred.Load(), err
}

// TestParallelSameOutput: on every committed capture, the parallel decoder
// hands the sink exactly what the sequential one does, in every mode.
func TestParallelSameOutput(t *testing.T) {
	names, _ := filepath.Glob("../testdata/pcaps/*.pcap*")
	if len(names) == 0 {
		t.Fatal("no captures")
	}
	var late int64
	defer func() {
		if late == 0 {
			t.Error("no frame was decoded late: the budget path is not tested")
		}
	}()
	for _, name := range names {
		if strings.HasSuffix(name, ".json") {
			continue
		}
		for _, opts := range []Options{{}, {LazyEntryMetadata: true}, {KeepRaw: true}, {Retain: true, KeepRaw: true}} {
			seq := &fullDigestSink{digestSink{t: t}}
			errSeq := runPipeline(name, seq, opts)
			for _, workers := range []int{2, 3} {
				par := &fullDigestSink{digestSink{t: t}}
				n, errPar := runParallelPipelineN(name, par, opts, workers, workers == 3)
				late += n
				if fmt.Sprint(errSeq) != fmt.Sprint(errPar) {
					t.Fatalf("%s: errors %v and %v", name, errSeq, errPar)
				}
				compareDigests(t, fmt.Sprintf("%s %+v workers=%d", name, opts, workers), seq.lines, par.lines)
			}
		}
	}
}

// TestParallelFuzzCorpus: the same on the fuzz corpus, as FuzzStream cuts it.
func TestParallelFuzzCorpus(t *testing.T) {
	names, _ := filepath.Glob("testdata/fuzz/FuzzStream/*")
	for _, name := range names {
		vs := readCorpus(t, name)
		for _, opts := range []Options{{MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16}, {Retain: true, KeepRaw: true}} {
			seq := &fullDigestSink{digestSink{t: t}}
			feedFuzz(NewStreamDecoder(seq, opts), vs[0], vs[1])
			par := &fullDigestSink{digestSink{t: t}}
			pd := NewParallelStreamDecoder(par, opts, 2)
			pd.maxItems, pd.maxRaw = 2, 100
			feedFuzz(pd.StreamDecoder, vs[0], vs[1])
			pd.Wait()
			compareDigests(t, name, seq.lines, par.lines)
		}
	}
}

type panicSink struct{ nopSink }

func (panicSink) Frame(*Frame) { panic("sink bug") }

// TestParallelSinkPanic: a panic in the Sink reaches the caller at Wait.
func TestParallelSinkPanic(t *testing.T) {
	defer func() {
		if r := recover(); r != "sink bug" {
			t.Fatalf("recovered %v", r)
		}
	}()
	runParallelPipeline("../testdata/pcaps/many.pcap", &panicSink{}, Options{}, 2, true)
	t.Fatal("no panic")
}
