package render

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// reference is what the JSON writer printed before protojson.go: protojson
// with proto names, compacted, made safe for a terminal (AppendJSONSafe:
// the one sanitiser); ok is false when protojson fails (the writer then
// prints the error, through the same code as before).
func reference(m protoreflect.Message) (out []byte, ok bool) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m.Interface())
	if err != nil {
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, false
	}
	return AppendJSONSafe(nil, buf.Bytes()), true
}

type equivStats struct{ checked, fallbacks, wire, wireFallbacks int }

var testEnc = newProtoEncoder()

// checkEquiv checks that the fast encoder writes exactly what protojson +
// Compact write, and declines exactly the messages protojson fails on;
// then the same of the wire path on m's encoding.
func checkEquiv(t *testing.T, st *equivStats, what string, m protoreflect.Message) {
	t.Helper()
	st.checked++
	prefix := []byte(`{"x":`)
	got, ok := testEnc.appendProtoJSON(bytes.Clone(prefix), m)
	want, wok := reference(m)
	if len(testEnc.recs) != 0 || len(testEnc.wire) != 0 {
		t.Fatalf("%s: scratch not released", what)
	}
	switch {
	case ok != wok:
		_, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m.Interface())
		t.Fatalf("%s: fast encoder ok=%v, protojson err=%v\nfast: %s\nmessage: %v", what, ok, err, got, m.Interface())
	case !ok:
		st.fallbacks++
	case !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want):
		t.Fatalf("%s: output differs\nfast:     %s\nprotojson: %s", what, got[len(prefix):], want)
	}
	raw, err := proto.MarshalOptions{AllowPartial: true, Deterministic: true}.Marshal(m.Interface())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	checkWire(t, st, what+" (wire)", m.Type(), raw)
}

// checkWire checks that the wire path writes raw exactly as protojson +
// Compact write raw unmarshalled into a message of type mt, or declines.
// It declines when Unmarshal fails; it must not decline plain encodings.
func checkWire(t *testing.T, st *equivStats, what string, mt protoreflect.MessageType, raw []byte) {
	t.Helper()
	st.wire++
	prefix := []byte(`{"x":`)
	got, ok := testEnc.appendWire(bytes.Clone(prefix), raw, planFor(mt.Descriptor()))
	if len(testEnc.recs) != 0 || len(testEnc.wire) != 0 {
		t.Fatalf("%s: scratch not released", what)
	}
	m := mt.New()
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(raw, m.Interface()); err != nil {
		if ok {
			t.Fatalf("%s: wire path wrote %s for an encoding Unmarshal rejects: %v", what, got, err)
		}
		st.wireFallbacks++
		return
	}
	want, wok := reference(m)
	switch {
	case ok && !wok:
		t.Fatalf("%s: wire path wrote %s, protojson fails", what, got)
	case !ok:
		st.wireFallbacks++
	case !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want):
		t.Fatalf("%s: wire output differs\nwire:      %s\nprotojson: %s\nraw: %x", what, got[len(prefix):], want, raw)
	}
}

func (st *equivStats) log(t *testing.T) {
	t.Logf("%d messages, %d left to protojson; wire path: %d, %d declined", st.checked, st.fallbacks, st.wire, st.wireFallbacks)
}

// frameMessages lists every protobuf message the JSON writer prints for f,
// plus the whole BaseCommand.
func frameMessages(f *decode.Frame) []protoreflect.Message {
	var ms []protoreflect.Message
	if f.Command != nil {
		ms = append(ms, f.Command.ProtoReflect())
		for _, show := range []bool{false, true} {
			if sub := SubCommand(Redacted(f.Command, show)); sub != nil {
				ms = append(ms, sub)
			}
		}
	}
	if f.BrokerEntryMetadata != nil {
		ms = append(ms, f.BrokerEntryMetadata.ProtoReflect())
	}
	if f.Metadata != nil {
		ms = append(ms, f.Metadata.ProtoReflect())
	}
	for _, e := range f.Entries {
		if e.Metadata != nil {
			ms = append(ms, e.Metadata.ProtoReflect())
		}
	}
	return ms
}

type equivSink struct {
	t    *testing.T
	st   *equivStats
	name string
}

func (s *equivSink) Frame(f *decode.Frame) {
	for i, m := range frameMessages(f) {
		checkEquiv(s.t, s.st, s.name+" frame "+strconv.Itoa(f.N)+" message "+strconv.Itoa(i), m)
	}
	checkEntriesWire(s.t, s.st, s.name+" frame "+strconv.Itoa(f.N), f)
}

var smmDesc = (*pulsarapi.SingleMessageMetadata)(nil).ProtoReflect().Type()

// checkEntriesWire checks the wire path on the entries' metadata as carried.
func checkEntriesWire(t *testing.T, st *equivStats, what string, f *decode.Frame) {
	for i, e := range f.Entries {
		if e.RawMetadata != nil {
			checkWire(t, st, what+" entry "+strconv.Itoa(i), smmDesc, e.RawMetadata)
		}
	}
}

func (s *equivSink) Event(*decode.Event) {}

// TestProtoJSONCaptures compares on every frame of every committed capture.
func TestProtoJSONCaptures(t *testing.T) {
	var files []string
	for _, g := range []string{"../testdata/pcaps/*.pcap*", "../testdata/diff/*.pcap*"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found %d captures", len(files))
	}
	var st equivStats
	for _, name := range files {
		if strings.HasSuffix(name, ".json") {
			continue
		}
		src, err := capture.Open(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sink := &equivSink{t: t, st: &st, name: filepath.Base(name)}
		sd := decode.NewStreamDecoder(sink, decode.Options{})
		asm := reassembly.New(sd, reassembly.Options{
			Ports: []uint16{6650, 6660, 16650},
			Detect: func(b []byte) bool {
				v, _ := decode.CheckFrame(b, decode.DefaultMaxFrameSize)
				return v == decode.Likely
			},
		})
		err = asm.Run(context.Background(), src)
		src.Close()
		if err != nil {
			t.Logf("%s: %v", name, err)
		}
	}
	st.log(t)
	if st.checked < 1000 {
		t.Fatalf("only %d messages checked", st.checked)
	}
}

// TestProtoJSONVectors compares on the real broker's frames.
func TestProtoJSONVectors(t *testing.T) {
	files, _ := filepath.Glob("../testdata/vectors/*/*.frame")
	if len(files) == 0 {
		t.Fatal("no vectors")
	}
	var st equivStats
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			f := decode.Decode(data, decode.Options{Retain: true})
			for i, m := range frameMessages(f) {
				checkEquiv(t, &st, filepath.Base(name)+" message "+strconv.Itoa(i), m)
			}
			checkEntriesWire(t, &st, filepath.Base(name), f)
			if f.Size <= 0 || f.Size > len(data) {
				break
			}
			data = data[f.Size:]
		}
	}
	st.log(t)
}

// readCorpus returns the []byte values of a go-fuzz corpus directory.
func readCorpus(t *testing.T, dir string) [][]byte {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var out [][]byte
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if s, ok := strings.CutPrefix(line, "[]byte("); ok {
				if v, err := strconv.Unquote(strings.TrimSuffix(s, ")")); err == nil {
					out = append(out, []byte(v))
				}
			}
		}
	}
	return out
}

// TestProtoJSONFuzzCorpus compares on the decoder's fuzz corpus: decoded as
// frames, and each input (and its suffixes) parsed leniently as each
// message type of the schema, which yields unknown fields, missing
// required fields and invalid UTF-8.
func TestProtoJSONFuzzCorpus(t *testing.T) {
	var inputs [][]byte
	for _, d := range []string{"FuzzDecode", "FuzzStream"} {
		inputs = append(inputs, readCorpus(t, filepath.Join("../decode/testdata/fuzz", d))...)
	}
	if len(inputs) < 50 {
		t.Fatalf("found %d corpus inputs", len(inputs))
	}
	types := schemaTypes(t)
	var st equivStats
	unm := proto.UnmarshalOptions{AllowPartial: true}
	for n, data := range inputs {
		f := decode.Decode(data, decode.Options{Retain: true, MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16})
		for i, m := range frameMessages(f) {
			checkEquiv(t, &st, "corpus "+strconv.Itoa(n)+" frame message "+strconv.Itoa(i), m)
		}
		checkEntriesWire(t, &st, "corpus "+strconv.Itoa(n), f)
		for off := 0; off < len(data) && off < 16; off++ {
			for _, mt := range types {
				m := mt.New()
				what := "corpus " + strconv.Itoa(n) + " at " + strconv.Itoa(off) + " as " + string(m.Descriptor().FullName())
				checkWire(t, &st, what+" (raw wire)", mt, data[off:])
				if unm.Unmarshal(data[off:], m.Interface()) == nil {
					checkEquiv(t, &st, what, m)
				}
			}
		}
	}
	st.log(t)
}

// schemaTypes returns every message type of the Pulsar schema.
func schemaTypes(t *testing.T) []protoreflect.MessageType {
	var out []protoreflect.MessageType
	fd := (&pulsarapi.BaseCommand{}).ProtoReflect().Descriptor().ParentFile()
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			md := ms.Get(i)
			mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, mt)
			walk(md.Messages())
		}
	}
	walk(fd.Messages())
	if len(out) < 20 {
		t.Fatalf("found %d message types", len(out))
	}
	return out
}

// TestProtoJSONRandom compares on random messages of every schema type:
// every kind of field, edge values (large uint64, negative int32, unknown
// and negative enum numbers, NaN, infinities, -0, tiny and huge floats,
// strings with escapes, U+2028, U+FFFD, HTML characters, invalid UTF-8),
// unknown fields, and required fields sometimes left unset.
func TestProtoJSONRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	types := schemaTypes(t)
	var st equivStats
	for i := 0; i < n; i++ {
		mt := types[rng.IntN(len(types))]
		m := mt.New()
		fillRandom(rng, m, 0, rng.IntN(8) != 0)
		checkEquiv(t, &st, "random "+strconv.Itoa(i)+" "+string(m.Descriptor().FullName()), m)
	}
	st.log(t)
	if st.fallbacks > n/2 {
		t.Fatalf("%d of %d random messages left to protojson", st.fallbacks, n)
	}
}

var randomStrings = []string{
	"", "a", "persistent://public/default/t", "k0", "with space", `quote"in`, `back\slash`,
	"tab\tnl\nnr\rbs\bff\f", "\x00\x01\x1f\x7f", "<b>&amp;</b>", "é日本語", "\u2028\u2029", "\ufffd",
	"bad\xffutf8", "\xc3", "emoji 🙂", strings.Repeat("long ", 40), strings.Repeat("é", 100) + "\n",
}

var randomFloats = []float64{
	0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-7, 1e-6, 1e20, 1e21, 1e300, 5e-324,
	math.MaxFloat32, math.SmallestNonzeroFloat32, math.NaN(), math.Inf(1), math.Inf(-1), 123456789.125,
}

func randomScalar(rng *rand.Rand, fd protoreflect.FieldDescriptor, sane bool) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(rng.IntN(2) == 0)
	case protoreflect.StringKind:
		s := randomStrings[rng.IntN(len(randomStrings))]
		if sane && !isValidUTF8(s) {
			s = "ok"
		}
		return protoreflect.ValueOfString(s)
	case protoreflect.BytesKind:
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if rng.IntN(5) == 0 {
			b = nil
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32([]int32{0, 1, -1, math.MaxInt32, math.MinInt32, int32(rng.Uint32())}[rng.IntN(6)])
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{0, 1, -1, math.MaxInt64, math.MinInt64, int64(rng.Uint64())}[rng.IntN(6)])
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32([]uint32{0, 1, math.MaxUint32, rng.Uint32()}[rng.IntN(4)])
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64([]uint64{0, 1, math.MaxUint64, 1 << 63, rng.Uint64()}[rng.IntN(5)])
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(randomFloats[rng.IntN(len(randomFloats))] * (1 + rng.Float64())))
	case protoreflect.DoubleKind:
		f := randomFloats[rng.IntN(len(randomFloats))]
		if rng.IntN(2) == 0 {
			f *= 1 + rng.Float64()
		}
		return protoreflect.ValueOfFloat64(f)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		switch rng.IntN(6) {
		case 0:
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(-1 - rng.IntN(3)))
		case 1:
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(1000 + rng.IntN(3)))
		case 2:
			return protoreflect.ValueOfEnum(math.MinInt32)
		default:
			return protoreflect.ValueOfEnum(vals.Get(rng.IntN(vals.Len())).Number())
		}
	}
	panic("kind " + fd.Kind().String())
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "?") == s }

// fillRandom sets random fields of m; sane messages have valid UTF-8 and
// all required fields (so protojson accepts them).
func fillRandom(rng *rand.Rand, m protoreflect.Message, depth int, sane bool) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		required := fd.Cardinality() == protoreflect.Required
		if !(sane && required) && rng.IntN(3) != 0 {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for k, n := 0, rng.IntN(4); k < n; k++ {
				if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
					if depth > 3 {
						break
					}
					e := l.NewElement()
					fillRandom(rng, e.Message(), depth+1, sane)
					l.Append(e)
				} else {
					l.Append(randomScalar(rng, fd, sane))
				}
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if depth > 3 && !required {
				continue
			}
			fillRandom(rng, m.Mutable(fd).Message(), depth+1, sane)
		default:
			m.Set(fd, randomScalar(rng, fd, sane))
		}
	}
	if rng.IntN(4) == 0 { // unknown fields: protojson drops them
		var u []byte
		u = protowire.AppendTag(u, 9999, protowire.VarintType)
		u = protowire.AppendVarint(u, rng.Uint64())
		u = protowire.AppendTag(u, 10000, protowire.BytesType)
		u = protowire.AppendBytes(u, []byte("unknown\xff"))
		m.SetUnknown(u)
	}
}

// allKindsType is a test-only proto2 message with a field of every scalar
// kind (the Pulsar schema has no float, sint, sfixed or fixed fields),
// repeated ones, a recursive message field and a required field.
func allKindsType(t *testing.T) protoreflect.MessageType {
	kinds := []descriptorpb.FieldDescriptorProto_Type{
		descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, descriptorpb.FieldDescriptorProto_TYPE_FLOAT,
		descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_TYPE_UINT64,
		descriptorpb.FieldDescriptorProto_TYPE_INT32, descriptorpb.FieldDescriptorProto_TYPE_FIXED64,
		descriptorpb.FieldDescriptorProto_TYPE_FIXED32, descriptorpb.FieldDescriptorProto_TYPE_BOOL,
		descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_BYTES,
		descriptorpb.FieldDescriptorProto_TYPE_UINT32, descriptorpb.FieldDescriptorProto_TYPE_SFIXED32,
		descriptorpb.FieldDescriptorProto_TYPE_SFIXED64, descriptorpb.FieldDescriptorProto_TYPE_SINT32,
		descriptorpb.FieldDescriptorProto_TYPE_SINT64, descriptorpb.FieldDescriptorProto_TYPE_ENUM,
	}
	msg := &descriptorpb.DescriptorProto{Name: proto.String("AllKinds")}
	num := int32(1)
	add := func(name string, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label, typeName string) {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label.Enum()}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		msg.Field = append(msg.Field, f)
		num++
	}
	for _, k := range kinds {
		tn := ""
		if k == descriptorpb.FieldDescriptorProto_TYPE_ENUM {
			tn = ".rtest.Color"
		}
		name := strings.ToLower(strings.TrimPrefix(k.String(), "TYPE_"))
		add("opt_"+name, k, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, tn)
		add("rep_"+name, k, descriptorpb.FieldDescriptorProto_LABEL_REPEATED, tn)
	}
	add("child", descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, ".rtest.AllKinds")
	add("children", descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, descriptorpb.FieldDescriptorProto_LABEL_REPEATED, ".rtest.AllKinds")
	add("need", descriptorpb.FieldDescriptorProto_TYPE_UINT64, descriptorpb.FieldDescriptorProto_LABEL_REQUIRED, "")
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("rtest.proto"),
		Package: proto.String("rtest"),
		Syntax:  proto.String("proto2"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name:    proto.String("Color"),
			Options: &descriptorpb.EnumOptions{AllowAlias: proto.Bool(true)},
			Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: proto.String("RED"), Number: proto.Int32(0)},
				{Name: proto.String("GREEN"), Number: proto.Int32(1)},
				{Name: proto.String("VERT"), Number: proto.Int32(1)},
				{Name: proto.String("NEG"), Number: proto.Int32(-5)},
				{Name: proto.String("BIG"), Number: proto.Int32(100000)},
			},
		}},
		MessageType: []*descriptorpb.DescriptorProto{msg},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dynamicpb.NewMessageType(fd.Messages().Get(0))
}

// TestProtoJSONAllKinds compares on random messages with every kind of field.
func TestProtoJSONAllKinds(t *testing.T) {
	mt := allKindsType(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var st equivStats
	for i := 0; i < 20000; i++ {
		m := mt.New()
		fillRandom(rng, m, 0, rng.IntN(8) != 0)
		checkEquiv(t, &st, "AllKinds "+strconv.Itoa(i), m)
	}
	st.log(t)
}

// mangleWire returns variants of a message's encoding that Unmarshal
// accepts with other meanings or not at all: fields shuffled, repeated,
// dropped, unknown, with another wire type, empty packed runs, overlong
// varints, cut short.
func mangleWire(rng *rand.Rand, raw []byte) [][]byte {
	var recs [][]byte
	for b := raw; len(b) > 0; {
		_, _, n := protowire.ConsumeField(b)
		if n < 0 {
			return nil
		}
		recs = append(recs, b[:n])
		b = b[n:]
	}
	join := func(rs [][]byte) []byte {
		var out []byte
		for _, r := range rs {
			out = append(out, r...)
		}
		return out
	}
	var out [][]byte
	shuffled := append([][]byte(nil), recs...)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	out = append(out, join(shuffled))
	if len(recs) > 0 {
		k := rng.IntN(len(recs))
		dup := append(append([][]byte(nil), recs...), recs[k])
		out = append(out, join(dup))
		out = append(out, join(append(append([][]byte(nil), recs[:k]...), recs[k+1:]...)))
		out = append(out, raw[:rng.IntN(len(raw))])
	}
	num := protowire.Number(1 + rng.IntN(40))
	var x []byte
	switch rng.IntN(5) {
	case 0:
		x = protowire.AppendTag(x, num, protowire.VarintType)
		x = protowire.AppendVarint(x, rng.Uint64())
	case 1:
		x = protowire.AppendTag(x, num, protowire.BytesType)
		x = protowire.AppendBytes(x, nil) // empty packed run, or empty string
	case 2:
		x = protowire.AppendTag(x, num, protowire.Fixed32Type)
		x = protowire.AppendFixed32(x, rng.Uint32())
	case 3:
		x = protowire.AppendTag(x, num, protowire.Fixed64Type)
		x = protowire.AppendFixed64(x, rng.Uint64())
	case 4:
		x = protowire.AppendTag(x, num, protowire.VarintType)
		x = append(x, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00) // overlong 1
	}
	k := rng.IntN(len(recs) + 1)
	ins := append(append(append([][]byte(nil), recs[:k]...), x), recs[k:]...)
	out = append(out, join(ins))
	// a packed run of a varint field number, with a few values
	var pk []byte
	for i := 0; i < rng.IntN(3); i++ {
		pk = protowire.AppendVarint(pk, rng.Uint64()>>uint(rng.IntN(64)))
	}
	p := protowire.AppendTag(nil, num, protowire.BytesType)
	p = protowire.AppendBytes(p, pk)
	out = append(out, join(append(append([][]byte(nil), recs...), p)))
	return out
}

// TestProtoJSONWireMangled runs the wire path on mangled encodings of
// random messages of every type.
func TestProtoJSONWireMangled(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	types := append(schemaTypes(t), allKindsType(t))
	var st equivStats
	for i := 0; i < 20000; i++ {
		mt := types[rng.IntN(len(types))]
		if i%5 == 0 {
			mt = types[len(types)-1]
		}
		m := mt.New()
		fillRandom(rng, m, 0, rng.IntN(8) != 0)
		raw, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m.Interface())
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range mangleWire(rng, raw) {
			checkWire(t, &st, "mangled "+strconv.Itoa(i)+"."+strconv.Itoa(j)+" "+string(mt.Descriptor().FullName()), mt, v)
		}
	}
	st.log(t)
}

// TestAppendString checks the JSON writer's string and address quoting
// against encoding/json, which it replaced, with the sanitiser applied.
func TestAppendString(t *testing.T) {
	cases := append([]string{"\x7f", "a<b", "&", "\u2028", "x\xff", "127.0.0.1:6650", "[::1]:6650"}, randomStrings...)
	for i := 0; i < 128; i++ {
		cases = append(cases, "k"+string(rune(i))+"v")
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		want = AppendJSONSafe(nil, want)
		if got := appendString([]byte("x"), s); string(got[1:]) != string(want) {
			t.Errorf("appendString(%q) = %s, json.Marshal + AppendJSONSafe: %s", s, got[1:], want)
		}
	}
	for _, s := range []string{"127.0.0.1:6650", "[::1]:6650", "[fe80::1%eth0]:6650", "10.0.0.1:0"} {
		a := netip.MustParseAddrPort(s)
		want, _ := json.Marshal(a.String())
		if got := appendAddr([]byte("x"), a); string(got[1:]) != string(want) {
			t.Errorf("appendAddr(%v) = %s, want %s", a, got[1:], want)
		}
	}
	for _, p := range [][]byte{nil, {}, {0, 1, 2, 0xff}} {
		want, _ := json.Marshal(p)
		if got := appendBase64(nil, p); string(got) != string(want) {
			t.Errorf("appendBase64(%v) = %s, want %s", p, got, want)
		}
	}
}
