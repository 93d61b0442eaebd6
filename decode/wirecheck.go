package decode

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// wireSchema is a per-message table, indexed by field number, of what the
// schema expects on the wire. It lets the decoder find unknown fields
// (numbers, wire types or closed-enum values the schema lacks) by scanning
// the encoded bytes, without protobuf reflection, which is an order of
// magnitude slower. Only when the scan finds something does the decoder
// walk the decoded messages by reflection to name the fields.
type wireSchema struct {
	fields []wireField
}

type wireField struct {
	known  bool
	wire   protowire.Type
	packed bool        // repeated scalar: may also come packed (bytes)
	msg    *wireSchema // message fields
	enum   map[protoreflect.EnumNumber]bool
}

// newWireSchema builds the table of md and of every message it reaches.
func newWireSchema(md protoreflect.MessageDescriptor) *wireSchema {
	return buildWireSchema(md, map[protoreflect.FullName]*wireSchema{})
}

func buildWireSchema(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]*wireSchema) *wireSchema {
	if ws, ok := seen[md.FullName()]; ok {
		return ws
	}
	ws := &wireSchema{}
	seen[md.FullName()] = ws
	fs := md.Fields()
	maxNum := 0
	for i := 0; i < fs.Len(); i++ {
		maxNum = max(maxNum, int(fs.Get(i).Number()))
	}
	ws.fields = make([]wireField, maxNum+1)
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		wf := wireField{known: true, wire: wireType(fd.Kind())}
		wf.packed = fd.IsList() && wf.wire != protowire.BytesType
		switch {
		case fd.Message() != nil:
			wf.msg = buildWireSchema(fd.Message(), seen)
		case fd.Enum() != nil && fd.Enum().IsClosed():
			vs := fd.Enum().Values()
			wf.enum = make(map[protoreflect.EnumNumber]bool, vs.Len())
			for j := 0; j < vs.Len(); j++ {
				wf.enum[vs.Get(j).Number()] = true
			}
		}
		ws.fields[fd.Number()] = wf
	}
	return ws
}

func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}

// hasUnknown reports whether the encoded message b holds anything the
// schema ws lacks. b has already been parsed successfully.
func (ws *wireSchema) hasUnknown(b []byte, depth int) bool {
	if depth > 100 {
		return true // let the reflective walk sort it out
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return true
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return true
		}
		val := b[:m]
		b = b[m:]
		if int(num) >= len(ws.fields) || !ws.fields[num].known {
			return true
		}
		f := &ws.fields[num]
		if typ != f.wire {
			if !(f.packed && typ == protowire.BytesType) {
				return true
			}
			inner, _ := protowire.ConsumeBytes(val)
			if f.enum != nil && !f.validPacked(inner) {
				return true
			}
			continue
		}
		switch {
		case f.msg != nil && typ == protowire.BytesType:
			inner, _ := protowire.ConsumeBytes(val)
			if f.msg.hasUnknown(inner, depth+1) {
				return true
			}
		case f.msg != nil:
			return true // groups: not in this schema
		case f.enum != nil:
			v, _ := protowire.ConsumeVarint(val)
			if !f.enum[protoreflect.EnumNumber(int32(v))] {
				return true
			}
		}
	}
	return false
}

func (f *wireField) validPacked(b []byte) bool {
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 || !f.enum[protoreflect.EnumNumber(int32(v))] {
			return false
		}
		b = b[n:]
	}
	return true
}
