package decode

import (
	"testing"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"time"

	"github.com/pulsarscope/pulsarscope/reassembly"
)

// fuzzSeeds returns real frames and built payload frames.
func fuzzSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, v := range loadVectors(tb) {
		seeds = append(seeds, v.data)
	}
	for _, codec := range allCodecs {
		seeds = append(seeds, batchFrame(tb, codec, 3, 0))
	}
	return seeds
}

func checkFrameInvariants(t *testing.T, f *Frame, in []byte) {
	if HasProblem(f.Problems, CodeDecoderPanic) {
		t.Fatalf("decoder panic: %v", f.Problems)
	}
	for _, r := range f.Regions {
		if r.Start < 0 || r.Start > r.End || r.End > f.Size || r.End > len(in) {
			t.Fatalf("region %+v outside frame of %d (input %d)", r, f.Size, len(in))
		}
	}
	if len(f.Uncompressed) > DefaultMaxDecompressed {
		t.Fatalf("decompressed %d bytes", len(f.Uncompressed))
	}
}

// FuzzDecode feeds arbitrary bytes to the single-frame decoder.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	reuse := NewDecoder(Options{KeepRaw: true})
	// reuse2 decodes like the fresh decoder below but reuses its messages
	// from one input to the next: it must say exactly the same.
	reuse2 := NewDecoder(Options{MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16})
	// reuse3 does the same with the messages of three batch slots in
	// turn, as a parallel worker does (its templates are shared, its
	// messages are not).
	reuse3 := NewDecoder(Options{MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16})
	var slots [3]frameBufs
	turn := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFrameInvariants(t, reuse.Decode(data), data)
		fresh := Decode(data, Options{Retain: true, MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16})
		checkFrameInvariants(t, fresh, data)
		if got, want := frameDigest(reuse2.Decode(data)), frameDigest(fresh); got != want {
			t.Fatalf("reused messages:\n%s\nfresh:\n%s", got, want)
		}
		turn++
		reuse3.fb = &slots[turn%len(slots)]
		if got, want := frameDigest(reuse3.Decode(data)), frameDigest(fresh); got != want {
			t.Fatalf("reused messages of slot %d:\n%s\nfresh:\n%s", turn%len(slots), got, want)
		}
		_, _ = CheckFrame(data, 0)
		checkWireScan(t, data)
	})
}

// checkWireScan: whenever the reflective walk finds unknown fields in data
// taken as a BaseCommand or MessageMetadata, the fast wire scan must too.
func checkWireScan(t *testing.T, data []byte) {
	for _, m := range []proto.Message{new(pulsarapi.BaseCommand), new(pulsarapi.MessageMetadata)} {
		if (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(data, m) != nil {
			continue
		}
		var c checker
		c.walk(m.ProtoReflect(), "")
		if len(c.unknown) > 0 && !newWireSchema(m.ProtoReflect().Descriptor()).hasUnknown(data, 0) {
			t.Fatalf("wire scan missed %v", c.unknown)
		}
	}
	// The repeated-element count of the wire scan is what protobuf decodes.
	for _, m := range []proto.Message{new(pulsarapi.BaseCommand), new(pulsarapi.MessageMetadata)} {
		if (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(data, m) != nil {
			continue
		}
		want := countElements(m.ProtoReflect())
		if got := newWireSchema(m.ProtoReflect().Descriptor()).countRepeated(data, 0, 1<<30); got != want {
			t.Fatalf("%T: countRepeated %d, decoded %d elements", m, got, want)
		}
	}
	// A message the clean scan passes must be strictly valid, as each type.
	for _, m := range []proto.Message{new(pulsarapi.SingleMessageMetadata), new(pulsarapi.BaseCommand), new(pulsarapi.MessageMetadata)} {
		checkClean(t, data, m)
	}
}

// balanceSink checks, as it goes, that frames and events account for the
// stream bytes.
type balanceSink struct {
	t      *testing.T
	frames int64
	bytes  [2]int64 // frame + skipped + truncated bytes per direction
	closed []ConnStats
}

func (s *balanceSink) Frame(f *Frame) {
	if HasProblem(f.Problems, CodeDecoderPanic) {
		s.t.Fatalf("decoder panic: %v", f.Problems)
	}
	s.frames++
	s.bytes[f.Dir] += int64(f.Size - f.Missing) // a frame cut by a gap holds its captured start
	if f.Missing != 0 && !HasProblem(f.Problems, CodeBytesLost) {
		s.t.Fatalf("frame %d misses %d bytes without bytes-lost", f.N, f.Missing)
	}
}

func (s *balanceSink) Event(e *Event) {
	if HasProblem(e.Problems, CodeDecoderPanic) {
		s.t.Fatalf("decoder panic: %v", e.Problems)
	}
	switch e.Kind {
	case EventSkipped, EventTruncated:
		if e.Bytes <= 0 {
			s.t.Fatalf("%s event of %d bytes", e.Kind, e.Bytes)
		}
		s.bytes[e.Dir] += e.Bytes
	case EventClose:
		s.closed = append(s.closed, *e.Stats)
	}
}

// FuzzStream feeds arbitrary bytes to the stream decoder in arbitrary
// pieces, with gaps, on both directions; the accounting must balance.
func FuzzStream(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, []byte{byte(i), 7, 200, 3, 0, 90})
	}
	vs := vectorStreams(f)
	f.Add(append(append([]byte(nil), vs[0]...), vs[1]...), []byte{1, 2, 3, 250, 100})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		sink := &balanceSink{t: t}
		sd := NewStreamDecoder(sink, Options{MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16})
		c := testConn(len(cuts) > 0 && cuts[0]&1 == 0)
		sd.Open(c)
		ts := time.Unix(0, 0)
		gaps := 0
		for i := 0; len(data) > 0; i++ {
			k := 1
			if len(cuts) > 0 {
				k = int(cuts[i%len(cuts)])
			}
			dir := reassembly.Dir(i & 1)
			if k >= 250 && gaps < 8 { // a gap
				gaps++
				sd.Gap(c, dir, int64(k-249), ts)
				continue
			}
			k = min(max(k, 1)*(1+i%3), len(data))
			sd.Data(c, dir, data[:k], ts)
			data = data[k:]
		}
		sd.Close(c, reassembly.CloseFIN, ts)
		if len(sink.closed) != 1 {
			t.Fatalf("%d close events", len(sink.closed))
		}
		for d, st := range sink.closed[0] {
			if !st.Balanced() || st.Skipped < 0 || st.Truncated < 0 {
				t.Fatalf("dir %d unbalanced: %s", d, st)
			}
			if sink.bytes[d] != st.InFrames+st.Skipped+st.Truncated {
				t.Fatalf("dir %d: events and frames hold %d bytes, stats %s", d, sink.bytes[d], st)
			}
		}
		if tot := sd.Totals(); tot.Frames != sink.frames {
			t.Fatalf("totals %s, sink saw %d frames", tot, sink.frames)
		}
	})
}

// countElements counts the list elements of m at every level, by reflection.
func countElements(m protoreflect.Message) int {
	n := 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			n += l.Len()
			if fd.Message() != nil {
				for i := 0; i < l.Len(); i++ {
					n += countElements(l.Get(i).Message())
				}
			}
		case fd.Message() != nil:
			n += countElements(v.Message())
		}
		return true
	})
	return n
}
