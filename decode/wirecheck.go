package decode

import (
	"encoding/binary"

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
	// required has bit n set for each required field number n (< 64);
	// reqBig says some required field number is 64 or more (clean then
	// always defers to the full check).
	required uint64
	reqBig   bool
	// tag1 classifies the one-byte tags (fields 1-15) for clean's fast
	// path: tagVarint, tagBytes for plain scalar and bytes fields of the
	// right wire type; 0 for the rest (general path).
	tag1 [128]uint8
}

const (
	tagVarint = 1 + iota
	tagBytes
)

type wireField struct {
	known  bool
	wire   protowire.Type
	packed bool        // repeated scalar: may also come packed (bytes)
	list   bool        // repeated
	msg    *wireSchema // message fields
	enum   map[protoreflect.EnumNumber]bool
	// enumLow is enum for the values 0-255, a bit each (no map lookup).
	enumLow [4]uint64
}

// enumOK reports whether the varint v is a value of f's closed enum.
func (f *wireField) enumOK(v uint64) bool {
	n := protoreflect.EnumNumber(int32(v))
	if uint32(n) < 256 {
		return f.enumLow[n>>6]&(1<<(n&63)) != 0
	}
	return f.enum[n]
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
		wf.list = fd.IsList()
		switch {
		case fd.Message() != nil:
			wf.msg = buildWireSchema(fd.Message(), seen)
		case fd.Enum() != nil && fd.Enum().IsClosed():
			vs := fd.Enum().Values()
			wf.enum = make(map[protoreflect.EnumNumber]bool, vs.Len())
			for j := 0; j < vs.Len(); j++ {
				wf.enum[vs.Get(j).Number()] = true
				if n := vs.Get(j).Number(); n >= 0 && n < 256 {
					wf.enumLow[n>>6] |= 1 << (n & 63)
				}
			}
		}
		ws.fields[fd.Number()] = wf
		if n := fd.Number(); n < 16 && wf.msg == nil && wf.enum == nil {
			switch wf.wire {
			case protowire.VarintType:
				ws.tag1[byte(n)<<3|byte(protowire.VarintType)] = tagVarint
			case protowire.BytesType:
				ws.tag1[byte(n)<<3|byte(protowire.BytesType)] = tagBytes
			}
		}
		if fd.Cardinality() == protoreflect.Required {
			if fd.Number() < 64 {
				ws.required |= 1 << uint(fd.Number())
			} else {
				ws.reqBig = true
			}
		}
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
			if !f.enumOK(v) {
				return true
			}
		}
	}
	return false
}

func (f *wireField) validPacked(b []byte) bool {
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 || !f.enumOK(v) {
			return false
		}
		b = b[n:]
	}
	return true
}

// clean reports whether the encoded message b is plainly valid: it parses,
// every field is in the schema with the wire type the schema gives it (no
// packed variants), closed-enum values are known, and every required field
// is present, at every level. A clean message unmarshals strictly without
// error and without unknown fields, so the decoder has nothing to report
// on it; anything else (false) goes through the full unmarshal and check,
// which names the problem. clean may say false for odd but valid input.
//
// want names a top-level varint field whose last value is returned in v
// (found says whether it occurs); 0 for none.
func (ws *wireSchema) clean(b []byte, depth int, want protowire.Number) (v uint64, found, ok bool) {
	if depth > 100 || ws.reqBig {
		return 0, false, false
	}
	var seen uint64
	for len(b) > 0 {
		// Fast path: a one-byte tag of a plain field, a short value.
		if c := b[0]; c < 0x80 && len(b) >= 2 {
			switch ws.tag1[c] {
			case tagVarint:
				x, n := uint64(b[1]), 2
				if x >= 0x80 {
					if len(b) < 3 || b[2] >= 0x80 {
						break // long varint: general path
					}
					x, n = x&0x7f|uint64(b[2])<<7, 3
				}
				seen |= 1 << (c >> 3)
				if protowire.Number(c>>3) == want {
					v, found = x, true
				}
				b = b[n:]
				continue
			case tagBytes:
				if l := int(b[1]); l < 0x80 && l <= len(b)-2 {
					seen |= 1 << (c >> 3)
					b = b[2+l:]
					continue
				}
			}
		}
		var tag uint64
		if c := b[0]; c < 0x80 {
			tag = uint64(c)
			b = b[1:]
		} else {
			t, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, false, false
			}
			tag, b = t, b[n:]
		}
		num := tag >> 3
		if num == 0 || num >= uint64(len(ws.fields)) {
			return 0, false, false
		}
		f := &ws.fields[num]
		typ := protowire.Type(tag & 7)
		if !f.known || typ != f.wire {
			return 0, false, false
		}
		if num < 64 {
			seen |= 1 << num
		}
		switch typ {
		case protowire.VarintType:
			var x uint64
			if len(b) > 0 && b[0] < 0x80 {
				x = uint64(b[0])
				b = b[1:]
			} else {
				y, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return 0, false, false
				}
				x, b = y, b[n:]
			}
			if f.enum != nil && !f.enumOK(x) {
				return 0, false, false
			}
			if protowire.Number(num) == want {
				v, found = x, true
			}
		case protowire.Fixed32Type:
			if len(b) < 4 {
				return 0, false, false
			}
			b = b[4:]
		case protowire.Fixed64Type:
			if len(b) < 8 {
				return 0, false, false
			}
			b = b[8:]
		case protowire.BytesType:
			var l uint64
			if len(b) > 0 && b[0] < 0x80 {
				l = uint64(b[0])
				b = b[1:]
			} else {
				y, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return 0, false, false
				}
				l, b = y, b[n:]
			}
			if l > uint64(len(b)) {
				return 0, false, false
			}
			if f.msg != nil {
				if _, _, ok := f.msg.clean(b[:l], depth+1, 0); !ok {
					return 0, false, false
				}
			}
			b = b[l:]
		default:
			return 0, false, false
		}
	}
	if seen&ws.required != ws.required {
		return 0, false, false
	}
	return v, found, true
}

// countRepeated returns the number of elements of the repeated fields of
// the encoded message b, at every level (a packed field counts each
// value), stopping once it passes limit. b need not be valid: what does
// not parse ends the count.
func (ws *wireSchema) countRepeated(b []byte, depth, limit int) int {
	n := 0
	for len(b) > 0 && n <= limit && depth <= 100 {
		num, typ, m := protowire.ConsumeTag(b)
		if m < 0 {
			return n
		}
		b = b[m:]
		m = protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return n
		}
		val := b[:m]
		b = b[m:]
		if int(num) >= len(ws.fields) || !ws.fields[num].known {
			continue
		}
		f := &ws.fields[num]
		switch {
		case f.list && f.packed && typ == protowire.BytesType:
			inner, _ := protowire.ConsumeBytes(val)
			for len(inner) > 0 && n <= limit {
				k := 1 // a packed fixed32/fixed64 value, or one varint
				switch f.wire {
				case protowire.Fixed32Type:
					k = 4
				case protowire.Fixed64Type:
					k = 8
				default:
					if _, k = protowire.ConsumeVarint(inner); k < 0 {
						k = len(inner)
					}
				}
				n++
				inner = inner[min(k, len(inner)):]
			}
		case typ != f.wire:
			// Not the schema's wire type: an unknown field to protobuf.
		case f.list && f.msg == nil:
			n++
		case f.msg != nil:
			if f.list {
				n++
			}
			inner, _ := protowire.ConsumeBytes(val)
			n += f.msg.countRepeated(inner, depth+1, limit-n)
		}
	}
	return n
}

// Shape tokens: a field's tag (number<<3 | wire type), and around a
// nested message's fields these two.
const (
	shapeOpen  = 1<<32 - 1
	shapeClose = 1<<32 - 2
)

// shape appends to out the wire shape of the encoded message b: its tags
// in order, nested messages' tags between shapeOpen and shapeClose, no
// values. ok says b is clean (see clean: it parses, every field is in the
// schema with its wire type, enum values are known, required fields are
// present, at every level) and holds no repeated field, so that decoding
// it into a message holding exactly that shape (Decoder.unmarshalShaped)
// leaves nothing of the earlier one. A shape longer than shapedMaxTokens
// is not ok either (not worth keeping). On !ok, out holds a partial shape.
func (ws *wireSchema) shape(b []byte, depth int, out []uint32) ([]uint32, bool) {
	if depth > 100 || ws.reqBig {
		return out, false
	}
	var seen uint64
	for len(b) > 0 {
		tag, n := protowire.ConsumeVarint(b)
		if n < 0 || tag > 1<<31 {
			return out, false
		}
		b = b[n:]
		num := tag >> 3
		if num == 0 || num >= uint64(len(ws.fields)) {
			return out, false
		}
		f := &ws.fields[num]
		typ := protowire.Type(tag & 7)
		if !f.known || f.list || typ != f.wire {
			return out, false
		}
		if num < 64 {
			seen |= 1 << num
		}
		if len(out) >= shapedMaxTokens {
			return out, false // a shape this long is not kept
		}
		out = append(out, uint32(tag))
		switch typ {
		case protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 || (f.enum != nil && !f.enumOK(x)) {
				return out, false
			}
			b = b[n:]
		case protowire.Fixed32Type:
			if len(b) < 4 {
				return out, false
			}
			b = b[4:]
		case protowire.Fixed64Type:
			if len(b) < 8 {
				return out, false
			}
			b = b[8:]
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return out, false
			}
			b = b[n:]
			if f.msg != nil {
				var ok bool
				out = append(out, shapeOpen)
				if out, ok = f.msg.shape(v, depth+1, out); !ok {
					return out, false
				}
				out = append(out, shapeClose)
			}
		default:
			return out, false
		}
	}
	return out, seen&ws.required == ws.required
}

// wireTemplate is the shape of a clean message (see wireSchema.clean):
// its bytes and, per byte, which bits a message of the same shape may
// change. Batch entries of one producer share a shape, so most are
// checked by comparing them to the previous one, a few instructions.
// A message matches when it has the same length, the same tags, lengths,
// varint boundaries, enum values and nested messages, differing only in
// plain varint values and in string and bytes contents: it is then clean
// too (proto2 does not check UTF-8).
type wireTemplate struct {
	prev, mask       []byte
	wprev, wmask     []uint64 // the same a word at a time (mask 0 past the end)
	w0, w1, m0, m1   uint64   // the first two words of wprev, wmask (short messages)
	wantOff, wantLen int      // last occurrence of the wanted varint's value
	valid            bool
	// short: at most 16 bytes with a wanted varint of 1 or 2 bytes, whose
	// second byte counts under hi (all ones, or 0 for a 1-byte varint):
	// match's branch-free path.
	short bool
	hi    uint64
}

// build makes b, which clean accepted against ws, the template.
func (t *wireTemplate) build(ws *wireSchema, b []byte, want protowire.Number) {
	t.valid, t.wantLen = false, 0
	t.prev = append(t.prev[:0], b...)
	t.mask = t.mask[:0]
	fixed := func(n int) {
		for ; n > 0; n-- {
			t.mask = append(t.mask, 0xff)
		}
	}
	for p := 0; p < len(b); {
		num, typ, n := protowire.ConsumeTag(b[p:])
		if n < 0 || int(num) >= len(ws.fields) {
			return
		}
		fixed(n)
		p += n
		m := protowire.ConsumeFieldValue(num, typ, b[p:])
		if m < 0 {
			return
		}
		f := &ws.fields[num]
		if num == want && typ == protowire.VarintType {
			t.wantOff, t.wantLen = p, m // the last one counts
		}
		switch {
		case typ == protowire.VarintType && f.enum == nil && m < 10:
			for j := 0; j < m; j++ {
				t.mask = append(t.mask, 0x80) // the continuation bit stays
			}
		case typ == protowire.BytesType && f.msg == nil:
			_, k := protowire.ConsumeVarint(b[p:])
			fixed(k)
			for j := k; j < m; j++ {
				t.mask = append(t.mask, 0)
			}
		default:
			fixed(m)
		}
		p += m
	}
	t.words()
	t.short = len(b) <= 16 && (t.wantLen == 1 || t.wantLen == 2)
	t.hi = 0
	if t.wantLen == 2 {
		t.hi = ^uint64(0)
	}
	t.valid = true
}

// words fills wprev, wmask and their first two words from prev and mask.
func (t *wireTemplate) words() {
	t.wprev, t.wmask = t.wprev[:0], t.wmask[:0]
	for i := 0; i < len(t.prev); i += 8 {
		var pw, mw [8]byte
		copy(pw[:], t.prev[i:])
		copy(mw[:], t.mask[i:])
		t.wprev = append(t.wprev, binary.LittleEndian.Uint64(pw[:]))
		t.wmask = append(t.wmask, binary.LittleEndian.Uint64(mw[:]))
	}
	t.w0, t.w1, t.m0, t.m1 = 0, 0, 0, 0
	if len(t.wprev) > 0 {
		t.w0, t.m0 = t.wprev[0], t.wmask[0]
	}
	if len(t.wprev) > 1 {
		t.w1, t.m1 = t.wprev[1], t.wmask[1]
	}
}

// match reports whether b has the template's shape (and so is clean),
// with the value of the wanted varint (found false when absent). ext is b
// and what follows it in memory (b == ext[:len(b)]): with 8 bytes of slack
// the comparison goes a word at a time.
func (t *wireTemplate) match(b, ext []byte) (v uint64, found, ok bool) {
	n := len(b)
	if !t.valid || n != len(t.prev) {
		return 0, false, false
	}
	if t.short && len(ext) >= 17 {
		// Most entry metadata: two words and a short varint, no loop and
		// no branch on the varint's length (which varies from entry to
		// entry). wantOff < n <= 16.
		if (binary.LittleEndian.Uint64(ext)^t.w0)&t.m0|(binary.LittleEndian.Uint64(ext[8:])^t.w1)&t.m1 != 0 {
			return 0, false, false
		}
		o := t.wantOff & 15
		return uint64(ext[o]&0x7f) | uint64(ext[o+1])<<7&t.hi, true, true
	}
	if n <= 16 && len(ext) >= 16 {
		// Two words, no loop.
		if (binary.LittleEndian.Uint64(ext)^t.w0)&t.m0|(binary.LittleEndian.Uint64(ext[8:])^t.w1)&t.m1 != 0 {
			return 0, false, false
		}
	} else if w := len(t.wprev); len(ext) >= w*8 {
		for i := 0; i < w; i++ {
			if (binary.LittleEndian.Uint64(ext[i*8:])^t.wprev[i])&t.wmask[i] != 0 {
				return 0, false, false
			}
		}
	} else {
		prev, mask := t.prev[:n], t.mask[:n]
		for i, c := range b {
			if (c^prev[i])&mask[i] != 0 {
				return 0, false, false
			}
		}
	}
	if t.wantLen == 0 {
		return 0, false, true
	}
	x := b[t.wantOff:]
	switch t.wantLen {
	case 1:
		return uint64(x[0]), true, true
	case 2:
		return uint64(x[0]&0x7f) | uint64(x[1])<<7, true, true
	}
	v, _ = protowire.ConsumeVarint(x[:t.wantLen])
	return v, true, true
}

// templateCache holds the templates of the last shapes seen (the
// producers of a capture each have theirs), two per message length modulo
// tmplSlots, most recently used first: entries of one batch differ in
// length as their varints grow, and a lookup by length finds the template
// without trying the others.
type templateCache struct {
	t [tmplSlots][2]*wireTemplate
}

const tmplSlots = 16

// match tries the templates of b's length (see wireTemplate.match); the
// wanted field must be present.
func (c *templateCache) match(b, ext []byte) (v uint64, ok bool) {
	s := &c.t[len(b)%tmplSlots]
	if t := s[0]; t != nil && t.short && t.valid && len(b) == len(t.prev) && len(ext) >= 17 {
		// wireTemplate.match's short path, without the call.
		if (binary.LittleEndian.Uint64(ext)^t.w0)&t.m0|(binary.LittleEndian.Uint64(ext[8:])^t.w1)&t.m1 == 0 {
			o := t.wantOff & 15
			return uint64(ext[o]&0x7f) | uint64(ext[o+1])<<7&t.hi, true
		}
	}
	return c.matchSlow(s, b, ext)
}

func (c *templateCache) matchSlow(s *[2]*wireTemplate, b, ext []byte) (v uint64, ok bool) {
	if t := s[0]; t != nil {
		if v, found, ok := t.match(b, ext); ok && found {
			return v, true
		}
	}
	if t := s[1]; t != nil {
		if v, found, ok := t.match(b, ext); ok && found {
			s[0], s[1] = t, s[0]
			return v, true
		}
	}
	return 0, false
}

// add makes b (clean) the first template of its length, in place of the
// least recently used one.
func (c *templateCache) add(ws *wireSchema, b []byte, want protowire.Number) {
	s := &c.t[len(b)%tmplSlots]
	t := s[1]
	if t == nil {
		t = new(wireTemplate)
	}
	s[0], s[1] = t, s[0]
	t.build(ws, b, want)
}
