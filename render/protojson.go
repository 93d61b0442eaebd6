package render

import (
	"encoding/base64"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/secret"
)

// This file is a JSON encoder for protobuf messages that writes exactly what
// protojson.MarshalOptions{UseProtoNames: true} followed by json.Compact
// writes (protojson_test.go checks it byte for byte), without protojson's
// per-call setup, intermediate buffer and the Compact pass. It walks a
// per-descriptor plan built once: fields in declaration order with their
// keys pre-escaped, kinds, enum names and sub-plans.
//
// Conventions (protojson's): populated fields only (proto2 presence, lists
// non-empty), declaration order; proto field names; 64-bit integers as
// quoted decimals; float/double NaN and infinities as strings, others as
// encoding/json does; bytes as standard padded base64; enums by name, by
// number when unknown; unknown fields dropped.
//
// Whatever the encoder does not handle, it leaves to protojson: the caller
// falls back when appendProtoJSON reports false. That is the case for
// messages with map fields, extension ranges, well-known types and message
// sets (none in the Pulsar schema), and for messages protojson rejects —
// a string that is not valid UTF-8, a required field not set — so that the
// fallback prints protojson's own error exactly as before.

// msgPlan is how one message type is written.
type msgPlan struct {
	fallback bool        // leave the message to protojson
	noWire   bool        // appendWire leaves the message to the reflective path
	fields   []fieldPlan // by declaration index
	required []int       // indexes of required fields
	byNum    []int16     // field index by number (-1: unknown), numbers < len
	numMap   map[protowire.Number]int16
}

type fieldPlan struct {
	fd       protoreflect.FieldDescriptor
	key      string // `"name":`
	kind     protoreflect.Kind
	list     bool
	required bool
	secret   bool           // secret.Field: the wire path declines it when redacting
	wireType protowire.Type // the wire type of one value
	packable bool           // repeated scalar: may come packed
	enum     *enumNames     // EnumKind
	sub      *msgPlan       // MessageKind
}

// fieldIndex returns the index of field number num, or -1.
func (p *msgPlan) fieldIndex(num protowire.Number) int {
	if num >= 0 && int(num) < len(p.byNum) {
		return int(p.byNum[num])
	}
	if i, ok := p.numMap[num]; ok {
		return int(i)
	}
	return -1
}

// enumNames maps enum numbers to their quoted JSON names.
type enumNames struct {
	dense  []string // by number 0..len-1; "" when the number is not declared
	sparse map[protoreflect.EnumNumber]string
}

func (e *enumNames) name(n protoreflect.EnumNumber) string {
	if n >= 0 && int(n) < len(e.dense) {
		return e.dense[n]
	}
	return e.sparse[n]
}

// Plans are built once per message type and never change; the table is
// replaced (copy on write) when a type is added, so lookups take no lock.
var (
	plansMu sync.Mutex
	plans   atomic.Pointer[map[protoreflect.MessageDescriptor]*msgPlan]
)

// planFor returns the plan of md, building it (and its sub-plans) once.
func planFor(md protoreflect.MessageDescriptor) *msgPlan {
	if t := plans.Load(); t != nil {
		if p := (*t)[md]; p != nil {
			return p
		}
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	t := map[protoreflect.MessageDescriptor]*msgPlan{}
	if old := plans.Load(); old != nil {
		for k, v := range *old {
			t[k] = v
		}
	}
	p := buildPlan(t, md)
	plans.Store(&t)
	return p
}

// buildPlan builds md's plan into t.
func buildPlan(t map[protoreflect.MessageDescriptor]*msgPlan, md protoreflect.MessageDescriptor) *msgPlan {
	if p := t[md]; p != nil {
		return p
	}
	p := &msgPlan{}
	t[md] = p // before the fields: recursive types
	if md.IsMapEntry() || md.ExtensionRanges().Len() > 0 || md.ParentFile().Package() == "google.protobuf" {
		p.fallback = true
		return p
	}
	// The wire path does not do oneofs (last member wins) nor proto3
	// (strings must be valid UTF-8 to parse).
	p.noWire = md.Oneofs().Len() > 0 || md.Syntax() != protoreflect.Proto2
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.IsMap() {
			p.fallback = true
			return p
		}
		if fd.Cardinality() == protoreflect.Required {
			p.required = append(p.required, i)
		}
		key, ok := appendJSONString(nil, fd.TextName())
		if !ok {
			p.fallback = true
			return p
		}
		fp := fieldPlan{fd: fd, key: string(append(key, ':')), kind: fd.Kind(), list: fd.IsList(),
			required: fd.Cardinality() == protoreflect.Required, secret: secret.Field(fd)}
		switch fp.kind {
		case protoreflect.EnumKind:
			if fd.Enum().FullName() == "google.protobuf.NullValue" {
				p.fallback = true
				return p
			}
			fp.enum = buildEnumNames(fd.Enum())
		case protoreflect.MessageKind:
			fp.sub = buildPlan(t, fd.Message())
		case protoreflect.GroupKind:
			fp.sub = buildPlan(t, fd.Message())
			p.noWire = true
		}
		switch fp.kind {
		case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
			fp.wireType = protowire.BytesType
		case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
			fp.wireType, fp.packable = protowire.Fixed32Type, fp.list
		case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
			fp.wireType, fp.packable = protowire.Fixed64Type, fp.list
		default:
			fp.wireType, fp.packable = protowire.VarintType, fp.list
		}
		if n := fd.Number(); n < 256 {
			for int(n) >= len(p.byNum) {
				p.byNum = append(p.byNum, -1)
			}
			p.byNum[n] = int16(i)
		} else {
			if p.numMap == nil {
				p.numMap = map[protowire.Number]int16{}
			}
			p.numMap[n] = int16(i)
		}
		p.fields = append(p.fields, fp)
	}
	if fields.Len() > math.MaxInt16 {
		p.fallback = true
	}
	return p
}

func buildEnumNames(ed protoreflect.EnumDescriptor) *enumNames {
	e := &enumNames{sparse: map[protoreflect.EnumNumber]string{}}
	vals := ed.Values()
	for i := 0; i < vals.Len(); i++ {
		v := vals.Get(i)
		n := v.Number()
		// protojson uses Values().ByNumber: the first value declared with
		// a number wins (aliases).
		if vals.ByNumber(n) != v {
			continue
		}
		q, _ := appendJSONString(nil, string(v.Name()))
		name := string(q)
		if n >= 0 && n < 256 {
			for int(n) >= len(e.dense) {
				e.dense = append(e.dense, "")
			}
			e.dense[n] = name
		} else {
			e.sparse[n] = name
		}
	}
	return e
}

// protoEncoder writes messages as JSON; its scratch space is reused from
// call to call. Not safe for concurrent use.
type protoEncoder struct {
	recs    []rangeRec // fields of the messages being written, a stack
	collect func(protoreflect.FieldDescriptor, protoreflect.Value) bool
	wire    []wireRec // fields of the wire messages being written, a stack
	// redact makes the wire path decline secrets and credentials by
	// shape, which the caller redacts on the reflective path.
	redact bool
}

type rangeRec struct {
	idx int
	v   protoreflect.Value
}

func newProtoEncoder() *protoEncoder {
	e := &protoEncoder{}
	e.collect = func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		e.recs = append(e.recs, rangeRec{fd.Index(), v})
		return true
	}
	return e
}

// appendProtoJSON appends m as protojson (UseProtoNames) + json.Compact
// would. It reports false, with b in an unspecified state past its
// original length, when the caller must use protojson instead.
func (e *protoEncoder) appendProtoJSON(b []byte, m protoreflect.Message) ([]byte, bool) {
	return e.appendMessage(b, m, planFor(m.Descriptor()))
}

func (e *protoEncoder) appendMessage(b []byte, m protoreflect.Message, p *msgPlan) ([]byte, bool) {
	if p.fallback {
		return b, false
	}
	// Range visits the populated fields (in an order of its own) without
	// the per-field checks of Has and Get.
	base := len(e.recs)
	m.Range(e.collect)
	recs := e.recs[base:]
	defer func() { e.recs = e.recs[:base] }()
	for i := 1; i < len(recs); i++ { // insertion sort: few fields, nearly sorted
		for j := i; j > 0 && recs[j].idx < recs[j-1].idx; j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
	if !hasRequired(p, recs) {
		return b, false // protojson: "required field ... not set"
	}
	b = append(b, '{')
	var ok bool
	for i := range recs {
		if recs[i].idx >= len(p.fields) {
			return b, false
		}
		fp := &p.fields[recs[i].idx]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, fp.key...)
		v := recs[i].v
		if fp.list {
			l := v.List()
			b = append(b, '[')
			for j, n := 0, l.Len(); j < n; j++ {
				if j > 0 {
					b = append(b, ',')
				}
				if b, ok = e.appendSingular(b, fp, l.Get(j)); !ok {
					return b, false
				}
			}
			b = append(b, ']')
			continue
		}
		if b, ok = e.appendSingular(b, fp, v); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// hasRequired reports whether recs (sorted by index) hold every required
// field of p.
func hasRequired(p *msgPlan, recs []rangeRec) bool {
	k := 0
	for _, r := range p.required {
		for k < len(recs) && recs[k].idx < r {
			k++
		}
		if k == len(recs) || recs[k].idx != r {
			return false
		}
	}
	return true
}

func (e *protoEncoder) appendSingular(b []byte, fp *fieldPlan, v protoreflect.Value) ([]byte, bool) {
	switch fp.kind {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), true
	case protoreflect.StringKind:
		return appendJSONString(b, v.String())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, v.Int(), 10), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		b = append(b, '"')
		b = strconv.AppendInt(b, v.Int(), 10)
		return append(b, '"'), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = append(b, '"')
		b = strconv.AppendUint(b, v.Uint(), 10)
		return append(b, '"'), true
	case protoreflect.FloatKind:
		return appendJSONFloat(b, v.Float(), 32), true
	case protoreflect.DoubleKind:
		return appendJSONFloat(b, v.Float(), 64), true
	case protoreflect.BytesKind:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes())
		return append(b, '"'), true
	case protoreflect.EnumKind:
		return appendEnum(b, fp, v.Enum()), true
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return e.appendMessage(b, v.Message(), fp.sub)
	}
	return b, false
}

func appendEnum(b []byte, fp *fieldPlan, n protoreflect.EnumNumber) []byte {
	if name := fp.enum.name(n); name != "" {
		return append(b, name...)
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// appendJSONFloat is protojson's float formatting (encoding/json's, with
// NaN and infinities as strings).
func appendJSONFloat(b []byte, n float64, bitSize int) []byte {
	switch {
	case math.IsNaN(n):
		return append(b, `"NaN"`...)
	case math.IsInf(n, +1):
		return append(b, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(n); abs != 0 {
		if bitSize == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bitSize == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, n, format, -1, bitSize)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString quotes s as protojson does ('"', '\\' and control
// characters escaped as \b \f \n \r \t or \u00XX), and also escapes, as
// \uXXXX, every other rune the sanitiser refuses (DEL, C1 controls, format
// characters: Printable), so that what protojson + AppendJSONSafe write is
// what it writes. It reports false when s is not valid UTF-8 (protojson's
// error).
func appendJSONString(b []byte, s string) ([]byte, bool) { return appendJSONText(b, s) }

// appendJSONStringBytes is appendJSONString of string(s), without the copy.
func appendJSONStringBytes(b []byte, s []byte) ([]byte, bool) { return appendJSONText(b, s) }

func appendJSONText[T string | []byte](b []byte, s T) ([]byte, bool) {
	b = append(b, '"')
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x7f {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			var r rune
			var n int
			switch s := any(s[i:]).(type) {
			case string:
				r, n = utf8.DecodeRuneInString(s)
			case []byte:
				r, n = utf8.DecodeRune(s)
			}
			if r == utf8.RuneError && n == 1 {
				return b, false
			}
			if !Printable(r, n) { // the sanitiser's escape (sanitize.go)
				b = append(b, s[:i]...)
				b = AppendJSONEscape(b, r)
				s = s[i+n:]
				i = 0
				continue
			}
			i += n
			continue
		}
		b = append(b, s[:i]...)
		b = append(b, '\\')
		switch c {
		case '"', '\\':
			b = append(b, c)
		case '\b':
			b = append(b, 'b')
		case '\f':
			b = append(b, 'f')
		case '\n':
			b = append(b, 'n')
		case '\r':
			b = append(b, 'r')
		case '\t':
			b = append(b, 't')
		default:
			b = append(b, 'u')
			b = append(b, "0000"[1+(bits.Len32(uint32(c))-1)/4:]...)
			b = strconv.AppendUint(b, uint64(c), 16)
		}
		s = s[i+1:]
		i = 0
	}
	b = append(b, s...)
	return append(b, '"'), true
}
