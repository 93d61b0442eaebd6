package render

import (
	"encoding/base64"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/secret"
)

// The wire path writes a message straight from its protobuf encoding, as
// protojson would write it after proto.Unmarshal, without unmarshalling:
// batch entries' SingleMessageMetadata (decode.Entry.RawMetadata), which
// are most of a bulk capture's JSON. It reports false, and the caller
// unmarshals and uses appendProtoJSON, whenever the encoding is not the
// plain kind it handles:
//
//   - a field that does not parse, or a known field number with another
//     wire type than its kind's (Unmarshal keeps it as an unknown field);
//   - a non-repeated field given twice (Unmarshal keeps the last value, or
//     merges messages), groups, oneofs;
//   - anything protojson would reject: invalid UTF-8 in a string, a
//     required field missing.
//
// Fields may come in any order (output is in declaration order, like
// protojson's); repeated scalars may be packed or not, or both; unknown
// fields are skipped (protojson drops them).

type wireRec struct {
	idx int            // field index in the plan
	typ protowire.Type // wire type as carried
	v   uint64         // varint, fixed32 or fixed64 value
	s   []byte         // BytesType value
}

// appendWire appends the message of plan p encoded in raw as JSON.
func (e *protoEncoder) appendWire(b []byte, raw []byte, p *msgPlan) ([]byte, bool) {
	if p.fallback || p.noWire {
		return b, false
	}
	start := len(b)
	out, ok, sorted := e.appendWireInOrder(b, raw, p)
	if sorted {
		return out, ok
	}
	return e.appendWireSorted(out[:start], raw, p)
}

// appendWireInOrder is appendWire in one pass, for encodings whose fields
// come in declaration order (each repeated field's values together), as
// encoders write them. It reports inOrder false, having written anything,
// when they do not.
func (e *protoEncoder) appendWireInOrder(b []byte, raw []byte, p *msgPlan) (_ []byte, ok, inOrder bool) {
	b = append(b, '{')
	last := -1          // index of the last field written
	var list *fieldPlan // the repeated field whose array is open
	mark, elems := 0, 0 // where that array's key starts; its values so far
	required := 0
	first := true
	for len(raw) > 0 {
		var num protowire.Number
		var typ protowire.Type
		var n int
		if c := raw[0]; c < 0x80 && c >= 8 { // one-byte tag, field 1-15
			num, typ, n = protowire.Number(c>>3), protowire.Type(c&7), 1
		} else if num, typ, n = protowire.ConsumeTag(raw); n < 0 {
			return b, false, true
		}
		raw = raw[n:]
		idx := p.fieldIndex(num)
		if idx < 0 { // unknown field
			if n = protowire.ConsumeFieldValue(num, typ, raw); n < 0 {
				return b, false, true
			}
			raw = raw[n:]
			continue
		}
		fp := &p.fields[idx]
		if typ != fp.wireType && !(fp.packable && typ == protowire.BytesType) {
			return b, false, true
		}
		var v uint64
		var s []byte
		switch typ {
		case protowire.VarintType:
			if len(raw) > 0 && raw[0] < 0x80 {
				v, n = uint64(raw[0]), 1
			} else if len(raw) > 1 && raw[1] < 0x80 {
				v, n = uint64(raw[0]&0x7f)|uint64(raw[1])<<7, 2
			} else {
				v, n = protowire.ConsumeVarint(raw)
			}
		case protowire.Fixed32Type:
			var v32 uint32
			v32, n = protowire.ConsumeFixed32(raw)
			v = uint64(v32)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(raw)
		case protowire.BytesType:
			if len(raw) > 0 && raw[0] < 0x80 && int(raw[0]) < len(raw) { // length < 128, in raw
				s, n = raw[1:1+int(raw[0])], 1+int(raw[0])
			} else {
				s, n = protowire.ConsumeBytes(raw)
			}
		default:
			return b, false, true
		}
		if n < 0 {
			return b, false, true
		}
		raw = raw[n:]
		if idx < last || idx == last && !fp.list {
			return b, false, false // out of order, or a field given twice
		}
		if idx != last {
			if list != nil { // close the open array
				if elems == 0 {
					b = b[:mark]
				} else {
					b = append(b, ']')
					first = false
				}
				list = nil
			}
			if fp.required {
				required++
			}
			last = idx
			if fp.list {
				list, mark, elems = fp, len(b), 0
				if !first {
					b = append(b, ',')
				}
				b = append(b, fp.key...)
				b = append(b, '[')
			} else {
				if !first {
					b = append(b, ',')
				}
				first = false
				b = append(b, fp.key...)
				if b, ok = e.appendWireValue(b, fp, v, s); !ok {
					return b, false, true
				}
				continue
			}
		}
		// a value of the open array
		if !fp.packable || typ != protowire.BytesType {
			if elems > 0 {
				b = append(b, ',')
			}
			elems++
			if b, ok = e.appendWireValue(b, fp, v, s); !ok {
				return b, false, true
			}
			continue
		}
		if b, elems, ok = appendPacked(b, fp, s, elems); !ok {
			return b, false, true
		}
	}
	if list != nil {
		if elems == 0 {
			b = b[:mark]
		} else {
			b = append(b, ']')
		}
	}
	if required != len(p.required) {
		return b, false, true
	}
	return append(b, '}'), true, true
}

// appendPacked appends the values of a packed run s, elems values having
// been written to the array before.
func appendPacked(b []byte, fp *fieldPlan, s []byte, elems int) ([]byte, int, bool) {
	for len(s) > 0 {
		var v uint64
		var n int
		switch fp.wireType {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(s)
		case protowire.Fixed32Type:
			var v32 uint32
			v32, n = protowire.ConsumeFixed32(s)
			v = uint64(v32)
		default:
			v, n = protowire.ConsumeFixed64(s)
		}
		if n < 0 {
			return b, elems, false
		}
		s = s[n:]
		if elems > 0 {
			b = append(b, ',')
		}
		elems++
		b = appendWireScalar(b, fp, v)
	}
	return b, elems, true
}

// appendWireSorted is appendWire for fields in any order: it gathers them,
// sorts them by declaration (stable) and writes them.
func (e *protoEncoder) appendWireSorted(b []byte, raw []byte, p *msgPlan) ([]byte, bool) {
	base := len(e.wire)
	defer func() { e.wire = e.wire[:base] }()
	sorted := true
	last := -1
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return b, false
		}
		raw = raw[n:]
		idx := p.fieldIndex(num)
		if idx < 0 { // unknown field
			if n = protowire.ConsumeFieldValue(num, typ, raw); n < 0 {
				return b, false
			}
			raw = raw[n:]
			continue
		}
		fp := &p.fields[idx]
		if typ != fp.wireType && !(fp.packable && typ == protowire.BytesType) {
			return b, false
		}
		r := wireRec{idx: idx, typ: typ}
		switch typ {
		case protowire.VarintType:
			r.v, n = protowire.ConsumeVarint(raw)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(raw)
			r.v = uint64(v)
		case protowire.Fixed64Type:
			r.v, n = protowire.ConsumeFixed64(raw)
		case protowire.BytesType:
			r.s, n = protowire.ConsumeBytes(raw)
		default:
			return b, false
		}
		if n < 0 {
			return b, false
		}
		raw = raw[n:]
		if idx < last {
			sorted = false
		}
		last = idx
		e.wire = append(e.wire, r)
	}
	recs := e.wire[base:]
	if !sorted { // stable: repeated values keep their order
		for i := 1; i < len(recs); i++ {
			for j := i; j > 0 && recs[j].idx < recs[j-1].idx; j-- {
				recs[j], recs[j-1] = recs[j-1], recs[j]
			}
		}
	}
	k := 0
	for _, r := range p.required {
		for k < len(recs) && recs[k].idx < r {
			k++
		}
		if k == len(recs) || recs[k].idx != r {
			return b, false
		}
	}
	b = append(b, '{')
	first := true
	var ok bool
	for i := 0; i < len(recs); {
		idx := recs[i].idx
		j := i + 1
		for j < len(recs) && recs[j].idx == idx {
			j++
		}
		fp := &p.fields[idx]
		if !fp.list {
			if j-i > 1 {
				return b, false
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, fp.key...)
			if b, ok = e.appendWireValue(b, fp, recs[i].v, recs[i].s); !ok {
				return b, false
			}
			i = j
			continue
		}
		mark := len(b)
		if !first {
			b = append(b, ',')
		}
		b = append(b, fp.key...)
		b = append(b, '[')
		elems := 0
		for ; i < j; i++ {
			r := &recs[i]
			if !fp.packable || r.typ != protowire.BytesType {
				if elems > 0 {
					b = append(b, ',')
				}
				elems++
				if b, ok = e.appendWireValue(b, fp, r.v, r.s); !ok {
					return b, false
				}
				continue
			}
			if b, elems, ok = appendPacked(b, fp, r.s, elems); !ok {
				return b, false
			}
		}
		if elems == 0 { // only empty packed runs: the list is empty
			b = b[:mark]
			continue
		}
		b = append(b, ']')
		first = false
	}
	return append(b, '}'), true
}

// appendWireValue writes one value: v for numeric kinds, s for the others.
func (e *protoEncoder) appendWireValue(b []byte, fp *fieldPlan, v uint64, s []byte) ([]byte, bool) {
	switch fp.kind {
	case protoreflect.StringKind:
		if e.redact && (fp.secret || secret.HasCredentialBytes(s)) {
			return b, false // the reflective path redacts it
		}
		return appendJSONStringBytes(b, s)
	case protoreflect.BytesKind:
		if e.redact && (fp.secret || secret.HasCredentialBytes(s)) {
			return b, false
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, s)
		return append(b, '"'), true
	case protoreflect.MessageKind:
		return e.appendWire(b, s, fp.sub)
	}
	return appendWireScalar(b, fp, v), true
}

// appendWireScalar writes a numeric field's wire value v as Unmarshal
// would convert it and protojson print it.
func appendWireScalar(b []byte, fp *fieldPlan, v uint64) []byte {
	switch fp.kind {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v != 0)
	case protoreflect.Int32Kind:
		return strconv.AppendInt(b, int64(int32(v)), 10)
	case protoreflect.Sint32Kind:
		return strconv.AppendInt(b, int64(int32(protowire.DecodeZigZag(v&math.MaxUint32))), 10)
	case protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, int64(int32(uint32(v))), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, uint64(uint32(v)), 10)
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(v), 10)
		return append(b, '"')
	case protoreflect.Sint64Kind:
		b = append(b, '"')
		b = strconv.AppendInt(b, protowire.DecodeZigZag(v), 10)
		return append(b, '"')
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = append(b, '"')
		b = strconv.AppendUint(b, v, 10)
		return append(b, '"')
	case protoreflect.FloatKind:
		return appendJSONFloat(b, float64(math.Float32frombits(uint32(v))), 32)
	case protoreflect.DoubleKind:
		return appendJSONFloat(b, math.Float64frombits(v), 64)
	case protoreflect.EnumKind:
		return appendEnum(b, fp, protoreflect.EnumNumber(int32(v)))
	}
	panic("render: appendWireScalar: kind " + fp.kind.String())
}
