package decode

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
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
	if rb := src.ReadBuffers(); rb != nil {
		sd.SetKeeper(rb) // as cli does
	}
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
	names := shippedCaptures(t)
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

// poisonKeeper is a Keeper that moves the bytes of every Data call into
// small chunks of its own, holding them as capture.ReadBuffers does: a
// call lies in the current chunk, after the calls before it, or in the
// next chunk no one holds, which is first filled with 0xee. A frame read
// after its chunk was released and taken again is so seen, and under
// -race the read itself.
type poisonKeeper struct {
	*ParallelStreamDecoder
	chunks        [][]byte
	held          []atomic.Int32
	cur, w        int
	holds, reused int
}

func newPoisonKeeper(p *ParallelStreamDecoder, n, size int) *poisonKeeper {
	k := &poisonKeeper{ParallelStreamDecoder: p, chunks: make([][]byte, n), held: make([]atomic.Int32, n)}
	for i := range k.chunks {
		k.chunks[i] = make([]byte, size)
	}
	p.SetKeeper(k)
	return k
}

func (k *poisonKeeper) Data(c *reassembly.Conn, d reassembly.Dir, data []byte, ts time.Time) {
	k.ParallelStreamDecoder.Data(c, d, k.place(data), ts)
}

// place returns data moved into a chunk (data itself when it does not fit
// in one, or every other chunk is held).
func (k *poisonKeeper) place(data []byte) []byte {
	size := len(k.chunks[0])
	if len(data) > size {
		return data
	}
	if k.w+len(data) > size {
		next := -1
		for i := range k.chunks {
			if i != k.cur && k.held[i].Load() == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			return data
		}
		k.cur, k.w = next, 0
		for j := range k.chunks[next] {
			k.chunks[next][j] = 0xee
		}
		k.reused++
	}
	b := k.chunks[k.cur][k.w : k.w+len(data)]
	copy(b, data)
	k.w += len(data)
	return b
}

func (k *poisonKeeper) Owner(b []byte) (int, bool) {
	for i, ch := range k.chunks {
		if aliases(b, ch) { // b, from Data, is within ch if it starts there
			return i, true
		}
	}
	return 0, false
}

func (k *poisonKeeper) Hold(id int) {
	k.holds++
	k.held[id].Add(1)
}

func (k *poisonKeeper) Release(id int) {
	if k.held[id].Add(-1) < 0 {
		panic("Release without Hold")
	}
}

// TestParallelKeeper: with frames held in a Keeper's chunks instead of
// copied, chunks taken again as soon as they are released, and filled
// with garbage then, the parallel decoder still hands the sink exactly
// what the sequential one does, and releases every chunk it held.
func TestParallelKeeper(t *testing.T) {
	names := shippedCaptures(t)
	holds, reused := 0, 0
	for _, name := range names {
		for _, tc := range []struct {
			opts  Options
			chunk int
		}{{Options{}, 256}, {Options{}, 2048}, {Options{Retain: true, KeepRaw: true}, 512}} {
			opts := tc.opts
			seq := &fullDigestSink{digestSink{t: t}}
			errSeq := runPipeline(name, seq, opts)
			par := &fullDigestSink{digestSink{t: t}}
			src, err := capture.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			// Batches of many small frames: those in flight span many
			// chunks, which the reader would take again if they were
			// not held.
			pd := NewParallelStreamDecoder(par, opts, 2)
			pd.maxItems, pd.maxRaw = 16, 1<<16
			k := newPoisonKeeper(pd, 3, tc.chunk)
			errPar := reassembly.New(k, reassembly.Options{}).Run(context.Background(), src)
			pd.Wait()
			src.Close()
			if fmt.Sprint(errSeq) != fmt.Sprint(errPar) {
				t.Fatalf("%s: errors %v and %v", name, errSeq, errPar)
			}
			compareDigests(t, fmt.Sprintf("%s %+v", name, opts), seq.lines, par.lines)
			for i := range k.held {
				if v := k.held[i].Load(); v != 0 {
					t.Errorf("%s: chunk %d still held %d times", name, i, v)
				}
			}
			holds += k.holds
			reused += k.reused
		}
	}
	if holds == 0 || reused == 0 {
		t.Errorf("%d holds, %d chunks reused: the test tests nothing", holds, reused)
	}
}

// TestParallelDropsAckIDs: once delivered, no batch slot keeps the
// message ids of the ACK decoded into it, by protobuf or by decodeAck
// (whose ids go back to the pool).
func TestParallelDropsAckIDs(t *testing.T) {
	src, err := capture.Open("../testdata/pcaps/subscriptions.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	acks := 0
	sink := sinkFunc(func(f *Frame) {
		if len(f.Command.GetAck().GetMessageId()) > 0 {
			acks++
		}
	})
	pd := NewParallelStreamDecoder(sink, Options{}, 2)
	pd.noStream = true // every frame decoded into a slot
	if err := reassembly.New(pd, reassembly.Options{}).Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	pd.Wait()
	if acks == 0 {
		t.Fatal("no ACK with message ids: the test tests nothing")
	}
	fast := 0
	for len(pd.free) > 0 {
		b := <-pd.free
		for i, fb := range b.slots {
			if fb.ackCmd != nil {
				fast++
			}
			if fb.acks != nil {
				t.Errorf("batch %d slot %d keeps the ids of an ACK it decoded (decodeAck)", b.seq, i)
			}
			msgs := []*pulsarapi.BaseCommand{fb.cmd, fb.ackCmd}
			for _, s := range fb.cmds {
				if s != nil {
					msgs = append(msgs, s.m)
				}
			}
			for _, m := range msgs {
				if n := len(m.GetAck().GetMessageId()); n > 0 {
					t.Errorf("batch %d slot %d keeps the %d message ids of an ACK", b.seq, i, n)
				}
			}
		}
	}
	if fast == 0 {
		t.Error("no ACK decoded by decodeAck: its give-back is not tested")
	}
}

// sinkFunc is a Sink of frames (events are ignored).
type sinkFunc func(*Frame)

func (s sinkFunc) Frame(f *Frame) { s(f) }
func (s sinkFunc) Event(*Event)   {}
