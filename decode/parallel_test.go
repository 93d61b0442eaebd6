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
	_, err := runParallelPipelineN(name, sink, opts, workers, tiny, false)
	return err
}

// parRun is what runParallelPipelineN counted: frames decoded late,
// batches decoded frame by frame by the delivering worker (streamed) and
// into their slots.
type parRun struct{ late, streamed, slotted int64 }

// runParallelPipelineN also returns what the decoder counted; noStream
// makes every batch decoded into its slots.
func runParallelPipelineN(name string, sink Sink, opts Options, workers int, tiny, noStream bool) (parRun, error) {
	src, err := capture.Open(name)
	if err != nil {
		return parRun{}, err
	}
	defer src.Close()
	sd := NewParallelStreamDecoder(sink, opts, workers)
	if tiny {
		sd.maxItems, sd.maxRaw, sd.budget = 3, 200, 300
	}
	sd.noStream = noStream
	if v, err := strconv.Atoi(os.Getenv("PAR_ITEMS")); err == nil {
		sd.maxItems = v
	}
	if v, err := strconv.Atoi(os.Getenv("PAR_RAW")); err == nil {
		sd.maxRaw = v
	}
	err = reassembly.New(sd, reassembly.Options{}).Run(context.Background(), src)
	sd.Wait()
	return parRun{sd.deferred.Load(), sd.streamed.Load(), sd.slotted.Load()}, err
}

// TestParallelSameOutput: on every committed capture, the parallel decoder
// hands the sink exactly what the sequential one does, in every mode, with
// batches streamed by the delivering worker or decoded into their slots.
func TestParallelSameOutput(t *testing.T) {
	names, _ := filepath.Glob("../testdata/pcaps/*.pcap*")
	if len(names) == 0 {
		t.Fatal("no captures")
	}
	var total parRun
	defer func() {
		if total.late == 0 {
			t.Error("no frame was decoded late: the budget path is not tested")
		}
		if total.streamed == 0 || total.slotted == 0 {
			t.Errorf("%d batches streamed, %d decoded into slots: a path is not tested", total.streamed, total.slotted)
		}
	}()
	runs := []struct {
		workers        int
		tiny, noStream bool
	}{{2, false, false}, {3, true, false}, {2, true, true}}
	for _, name := range names {
		if strings.HasSuffix(name, ".json") {
			continue
		}
		for _, opts := range []Options{{}, {LazyEntryMetadata: true}, {KeepRaw: true}, {Retain: true, KeepRaw: true}} {
			seq := &fullDigestSink{digestSink{t: t}}
			errSeq := runPipeline(name, seq, opts)
			for _, r := range runs {
				par := &fullDigestSink{digestSink{t: t}}
				n, errPar := runParallelPipelineN(name, par, opts, r.workers, r.tiny, r.noStream)
				total.late += n.late
				total.streamed += n.streamed
				total.slotted += n.slotted
				if fmt.Sprint(errSeq) != fmt.Sprint(errPar) {
					t.Fatalf("%s: errors %v and %v", name, errSeq, errPar)
				}
				compareDigests(t, fmt.Sprintf("%s %+v %+v", name, opts, r), seq.lines, par.lines)
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
