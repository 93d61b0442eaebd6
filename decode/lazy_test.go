package decode

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// digestSink records, per frame and event, everything the decoding modes
// must agree on: numbering, type, size, problems, entries and their
// metadata (decoded on demand in lazy mode).
type digestSink struct {
	t     *testing.T
	lines []string
}

var detMarshal = proto.MarshalOptions{AllowPartial: true, Deterministic: true}

func (s *digestSink) Frame(f *Frame) {
	var sb strings.Builder
	cmd, _ := detMarshal.Marshal(f.Command)
	md, _ := detMarshal.Marshal(f.Metadata)
	fmt.Fprintf(&sb, "F n=%d %v dir=%d off=%d size=%d type=%d cmd=%x md=%x problems=%q entries=%d",
		f.N, f.Time.UnixNano(), f.Dir, f.Offset, f.Size, f.Type, cmd, md, f.Problems, len(f.Entries))
	for i := range f.Entries {
		e := &f.Entries[i]
		m, err := e.DecodeMetadata()
		if err != nil {
			s.t.Fatalf("frame %d entry %d: %v", f.N, i, err)
		}
		b, _ := detMarshal.Marshal(m)
		fmt.Fprintf(&sb, " [%x %x %d]", b, e.RawMetadata, len(e.Payload))
	}
	s.lines = append(s.lines, sb.String())
}

func (s *digestSink) Event(e *Event) {
	s.lines = append(s.lines, fmt.Sprintf("E %s %v dir=%d off=%d bytes=%d %q %q", e.Kind, e.Time.UnixNano(), e.Dir, e.Offset, e.Bytes, e.Detail, e.Problems))
}

func compareDigests(t *testing.T, what string, eager, lazy []string) {
	t.Helper()
	if len(eager) != len(lazy) {
		t.Fatalf("%s: %d records eager, %d lazy", what, len(eager), len(lazy))
	}
	for i := range eager {
		if eager[i] != lazy[i] {
			t.Fatalf("%s: record %d differs:\neager %s\nlazy  %s", what, i, eager[i], lazy[i])
		}
	}
}

// bothModes runs run with eager and lazy entry metadata, each with and
// without Retain, and checks that all four agree.
func bothModes(t *testing.T, what string, run func(Sink, Options)) []string {
	t.Helper()
	var ref []string
	for _, retain := range []bool{false, true} {
		for _, lazy := range []bool{false, true} {
			s := &digestSink{t: t}
			run(s, Options{Retain: retain, LazyEntryMetadata: lazy, MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16})
			if ref == nil {
				ref = s.lines
				continue
			}
			compareDigests(t, fmt.Sprintf("%s retain=%v lazy=%v", what, retain, lazy), ref, s.lines)
		}
	}
	return ref
}

// TestLazyEntryMetadataCaptures: every committed capture decodes to the
// same frames, problems and entry metadata in both modes.
func TestLazyEntryMetadataCaptures(t *testing.T) {
	names := shippedCaptures(t)
	if len(names) == 0 {
		t.Fatal("no captures")
	}
	entries := 0
	for _, name := range names {
		ref := bothModes(t, name, func(s Sink, o Options) {
			o.MaxFrameSize, o.MaxDecompressed = 0, 0
			_ = runPipeline(name, s, o) // truncated captures: compare what came
		})
		for _, l := range ref {
			entries += strings.Count(l, " [")
		}
	}
	if entries == 0 {
		t.Fatal("no batch entries in the captures")
	}
}

// TestSkipPayloadContentsCaptures: on every committed capture, skipping
// payload contents changes nothing but the entries, the uncompressed bytes
// and the problems only those find.
func TestSkipPayloadContentsCaptures(t *testing.T) {
	names := shippedCaptures(t)
	payloads := 0
	for _, name := range names {
		var full, skip []string
		for _, s := range []bool{false, true} {
			d := &skimSink{skip: s}
			_ = runPipeline(name, d, Options{SkipPayloadContents: s}) // truncated captures: compare what came
			if d.bad != "" {
				t.Fatalf("%s: %s", name, d.bad)
			}
			if s {
				skip = d.lines
			} else {
				full, payloads = d.lines, payloads+d.payloads
			}
		}
		compareDigests(t, name, full, skip)
	}
	if payloads == 0 {
		t.Fatal("no payload frames in the captures")
	}
}

// skimSink digests frames without entries and payload-content problems.
type skimSink struct {
	skip     bool
	lines    []string
	payloads int
	bad      string
}

func (s *skimSink) Frame(f *Frame) {
	var probs []string
	for _, p := range f.Problems {
		if !payloadContentCode(p.Code) {
			probs = append(probs, p.Code+": "+p.Detail)
		}
	}
	if f.Metadata != nil {
		s.payloads++
	}
	if s.skip && (f.Entries != nil || f.Uncompressed != nil) && s.bad == "" {
		s.bad = fmt.Sprintf("frame %d has entries or uncompressed bytes", f.N)
	}
	md, _ := detMarshal.Marshal(f.Metadata)
	cmd, _ := detMarshal.Marshal(f.Command)
	s.lines = append(s.lines, fmt.Sprintf("F n=%d %v dir=%d off=%d size=%d type=%d cmd=%x md=%x payload=%d sum=%v problems=%q",
		f.N, f.Time.UnixNano(), f.Dir, f.Offset, f.Size, f.Type, cmd, md, len(f.Payload), f.Checksum, probs))
}

func (s *skimSink) Event(e *Event) {
	s.lines = append(s.lines, fmt.Sprintf("E %s %v dir=%d off=%d bytes=%d %q %q", e.Kind, e.Time.UnixNano(), e.Dir, e.Offset, e.Bytes, e.Detail, e.Problems))
}

// readCorpus parses a fuzz corpus file (go test fuzz v1) of []byte values.
func readCorpus(t *testing.T, name string) [][]byte {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vals [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "[]byte(") {
			continue
		}
		v, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(l, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		vals = append(vals, []byte(v))
	}
	return vals
}

// feedFuzz feeds data like FuzzStream: in pieces given by cuts, both
// directions, with gaps.
func feedFuzz(sd reassembly.Handler, data, cuts []byte) {
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
		if k >= 250 && gaps < 8 {
			gaps++
			sd.Gap(c, dir, int64(k-249), ts)
			continue
		}
		k = min(max(k, 1)*(1+i%3), len(data))
		sd.Data(c, dir, data[:k], ts)
		data = data[k:]
	}
	sd.Close(c, reassembly.CloseFIN, ts)
}

// TestLazyEntryMetadataFuzzCorpus: the same on the fuzz corpus, as single
// frames, as one stream and as FuzzStream cuts it.
func TestLazyEntryMetadataFuzzCorpus(t *testing.T) {
	names, _ := filepath.Glob("testdata/fuzz/*/*")
	if len(names) == 0 {
		t.Fatal("no fuzz corpus")
	}
	var inputs [][2][]byte
	for _, name := range names {
		vs := readCorpus(t, name)
		if len(vs) == 1 {
			vs = append(vs, nil)
		}
		inputs = append(inputs, [2][]byte{vs[0], vs[1]})
	}
	for _, s := range fuzzSeeds(t) {
		inputs = append(inputs, [2][]byte{s, nil})
	}
	for _, b := range lazyCases(t) {
		inputs = append(inputs, [2][]byte{b, nil}, [2][]byte{b, []byte{3, 1, 200, 251}})
	}
	for i, in := range inputs {
		data, cuts := in[0], in[1]
		what := fmt.Sprintf("input %d", i)
		bothModes(t, what+" decode", func(s Sink, o Options) {
			f := NewDecoder(o).Decode(data)
			f.N = 1
			s.Frame(f)
		})
		bothModes(t, what+" stream", func(s Sink, o Options) {
			feedChunks(NewStreamDecoder(s, o), testConn(true), [2][]byte{data, nil}, func() int { return 1 << 30 })
		})
		bothModes(t, what+" cuts", func(s Sink, o Options) {
			feedFuzz(NewStreamDecoder(s, o), data, cuts)
		})
	}
}

// lazyCases are batch frames whose entries' SingleMessageMetadata go wrong
// in every way the wire scan must notice.
func lazyCases(tb testing.TB) [][]byte {
	good := func(i int) []byte {
		return mustMarshal(tb, &pulsarapi.SingleMessageMetadata{
			PayloadSize: proto.Int32(int32(len(entryPayload(i)))),
			SequenceId:  proto.Uint64(uint64(i)),
			Properties:  []*pulsarapi.KeyValue{{Key: proto.String("k"), Value: proto.String("v")}},
		})
	}
	ps := func(i int) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), uint64(len(entryPayload(i))))
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	kv := func(fields ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), cat(fields...))
	}
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	mutations := [][]byte{
		cat(good(1), protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)), // unknown field
		cat(protowire.AppendVarint(protowire.AppendTag(nil, 8, protowire.VarintType), 1)),           // no payload_size
		cat(protowire.AppendFixed32(protowire.AppendTag(nil, 3, protowire.Fixed32Type), 5), ps(1)),  // wrong wire type, then right
		cat(protowire.AppendFixed32(protowire.AppendTag(nil, 3, protowire.Fixed32Type), 5)),         // only the wrong wire type
		cat(ps(1), []byte{0x40, 0x80}), // truncated varint
		cat(ps(1), kv(str(2, "v"))),    // property without key
		cat(ps(1), kv(str(1, "k"), str(2, "v"), protowire.AppendTag(nil, 7, protowire.VarintType), []byte{1})),                   // unknown nested
		cat(ps(1), kv(str(1, "k"), str(2, "v"), []byte{0x18})),                                                                   // nested truncated
		cat(ps(1), protowire.AppendTag(nil, 20, protowire.StartGroupType), protowire.AppendTag(nil, 20, protowire.EndGroupType)), // group
		cat(ps(1), []byte{0x00, 0x01}),                                                               // field number 0
		cat(ps(1), []byte{0xf8, 0xff, 0xff, 0xff, 0x7f, 0x01}),                                       // huge field number
		cat(protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1<<40), ps(1)), // overflowing, then right
		cat(ps(1), protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1<<40)), // right, then overflowing
		cat(ps(1), protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1<<63)), // negative
		cat(ps(1), str(7, "")),              // empty bytes: fine
		cat(ps(1), []byte{0x12, 0x05, 'a'}), // string past end
		cat(ps(1), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), // over-long tag
		cat(ps(1), protowire.AppendTag(nil, 3, 6)),                                           // wire type 6
		{}, // empty metadata
	}
	var frames [][]byte
	for mi, bad := range mutations {
		var body []byte
		for i := 0; i < 3; i++ {
			smm := good(i)
			if i == 1 {
				smm = bad
			}
			body = append(body, u32(uint32(len(smm)))...)
			body = append(body, smm...)
			body = append(body, entryPayload(i)...)
		}
		md := baseMeta()
		md.NumMessagesInBatch = proto.Int32(3)
		md.SequenceId = proto.Uint64(uint64(mi))
		frames = append(frames, metaFrame(tb, md, body))
	}
	return frames
}

// TestLazyEntryMetadataCases: each mutation is reported, identically in
// both modes, and clean entries are not.
func TestLazyEntryMetadataCases(t *testing.T) {
	for i, fr := range lazyCases(t) {
		var ref []Problem
		for _, lazy := range []bool{false, true} {
			f := NewDecoder(Options{Retain: true, LazyEntryMetadata: lazy}).Decode(fr)
			if lazy && f.Entries[0].Metadata != nil {
				t.Fatalf("case %d: lazy mode set Metadata", i)
			}
			if !lazy {
				ref = f.Problems
				continue
			}
			if fmt.Sprint(ref) != fmt.Sprint(f.Problems) {
				t.Fatalf("case %d: eager %v, lazy %v", i, ref, f.Problems)
			}
		}
		t.Logf("case %d: %v", i, ref)
	}
}

// TestWireCleanImpliesStrict: whenever the wire scan calls an input clean,
// a strict unmarshal succeeds without unknown fields (on the fuzz corpus
// and the cases, taken as each message type).
func TestWireCleanImpliesStrict(t *testing.T) {
	names, _ := filepath.Glob("testdata/fuzz/*/*")
	var inputs [][]byte
	for _, n := range names {
		inputs = append(inputs, readCorpus(t, n)...)
	}
	inputs = append(inputs, lazyCases(t)...)
	for _, in := range inputs {
		for _, m := range []proto.Message{new(pulsarapi.SingleMessageMetadata), new(pulsarapi.BaseCommand), new(pulsarapi.MessageMetadata), new(pulsarapi.KeyValue)} {
			for off := 0; off < len(in) && off < 64; off++ {
				checkClean(t, in[off:], m)
			}
		}
	}
}

func checkClean(t *testing.T, b []byte, m proto.Message) {
	ws := newWireSchema(m.ProtoReflect().Descriptor())
	_, _, ok := ws.clean(b, 0, 0)
	if !ok {
		return
	}
	proto.Reset(m)
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatalf("clean %x as %T but strict unmarshal: %v", b, m, err)
	}
	var c checker
	c.walk(m.ProtoReflect(), "")
	if len(c.unknown)+len(c.missing) > 0 {
		t.Fatalf("clean %x as %T but %v %v", b, m, c.unknown, c.missing)
	}
}

// TestWireTemplateImpliesClean: a message matching the template of a clean
// one is clean too, with the same payload_size as the full scan finds.
func TestWireTemplateImpliesClean(t *testing.T) {
	ws := newWireSchema((*pulsarapi.SingleMessageMetadata)(nil).ProtoReflect().Descriptor())
	var bases [][]byte
	for _, fr := range append(lazyCases(t), smallBatchFrame(t), batchFrame(t, pulsarapi.CompressionType_NONE, 5, 0)) {
		f := NewDecoder(Options{Retain: true, LazyEntryMetadata: true}).Decode(fr)
		for _, e := range f.Entries {
			bases = append(bases, e.RawMetadata)
		}
	}
	bases = append(bases,
		mustMarshal(t, &pulsarapi.SingleMessageMetadata{PayloadSize: proto.Int32(300), EventTime: proto.Uint64(1 << 62), OrderingKey: []byte("ok"),
			Properties: []*pulsarapi.KeyValue{{Key: proto.String("a"), Value: proto.String("b")}}, NullValue: proto.Bool(true)}),
		mustMarshal(t, &pulsarapi.SingleMessageMetadata{PayloadSize: proto.Int32(1), SequenceId: proto.Uint64(1<<64 - 1)}))
	r := rand.New(rand.NewSource(1))
	matched := 0
	for _, base := range bases {
		if _, _, ok := ws.clean(base, 0, payloadSizeField); !ok {
			continue
		}
		var tm wireTemplate
		tm.build(ws, base, payloadSizeField)
		for k := 0; k < 20000; k++ {
			b := append([]byte(nil), base...)
			for j := 0; j <= k%3; j++ {
				if len(b) > 0 {
					if k%2 == 0 {
						b[r.Intn(len(b))] ^= byte(1 << r.Intn(8))
					} else {
						b[r.Intn(len(b))] = byte(r.Intn(256))
					}
				}
			}
			ext := append(append([]byte(nil), b...), make([]byte, r.Intn(12))...)
			v, found, ok := tm.match(b, ext)
			if !ok {
				continue
			}
			matched++
			cv, cfound, cok := ws.clean(b, 0, payloadSizeField)
			if !cok || cv != v || cfound != found {
				t.Fatalf("%x matches the template of %x (%d %v) but clean says %v %d %v", b, base, v, found, cok, cv, cfound)
			}
			checkClean(t, b, new(pulsarapi.SingleMessageMetadata))
		}
	}
	if matched < 1000 {
		t.Fatalf("only %d mutations matched", matched)
	}
}
