package decode

import (
	"encoding/binary"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Replaying a merge. The commands and metadata of a stream of messages
// mostly differ from the previous ones of their kind only in varint values
// (sequence ids, times, sizes): the same tags, the same lengths, the same
// varint lengths, the same strings. A mergeTemplate records, for a message
// decoded into a reused Go message (unmarshalShaped), the bytes that must
// not change (everything but varint value bits and string contents) and,
// for each varint, where its value is stored in that Go message. A message
// that matches the template is decoded by storing its varints there: the
// result is what protobuf's merge of the same bytes gives (every field of
// the template's shape is overwritten, in wire order, last one wins), at a
// fraction of the cost. Anything else (strings that differ, a varint that
// grew a byte, another shape) takes the general path.
//
// The Go messages are protoc-gen-go's structs for proto2: a scalar field
// is a pointer to its value, set once the field has been decoded, and kept
// by protobuf's merge; a nested message is a pointer to its struct. The
// stores go through those pointers, found by the fields' struct tags.

// goField is where a field of a generated message struct lives.
type goField struct {
	off  uintptr // offset in the struct
	kind varintKind
	msg  *goLayout // nested message (kind 0)
}

// goLayout is the struct layout of a generated message, by field number.
type goLayout struct {
	fields []goField // index: field number; a zero goField: unusable
	ok     []bool
}

// varintKind is how a field's value is stored.
type varintKind uint8

const (
	kindNone varintKind = iota
	kindUint64
	kindInt64
	kindUint32
	kindInt32 // also enums
	kindBool
	kindFixed32 // the 4 bytes, little-endian, as they are (fixed32, sfixed32, float)
	kindFixed64
	kindString
	kindBytes // a []byte field, not a pointer
)

// newGoLayout reads the layout of the generated struct type t (a struct,
// not a pointer) for the fields of md. Fields it cannot store into (lists,
// maps, oneofs, bytes, other kinds) are left unusable: a template that
// needs one is not made.
func newGoLayout(t reflect.Type, md protoreflect.MessageDescriptor, seen map[reflect.Type]*goLayout) *goLayout {
	if l, ok := seen[t]; ok {
		return l
	}
	l := &goLayout{}
	seen[t] = l
	fs := md.Fields()
	maxNum := 0
	for i := 0; i < fs.Len(); i++ {
		maxNum = max(maxNum, int(fs.Get(i).Number()))
	}
	l.fields = make([]goField, maxNum+1)
	l.ok = make([]bool, maxNum+1)
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("protobuf")
		if tag == "" {
			continue
		}
		parts := strings.Split(tag, ",")
		if len(parts) < 2 {
			continue
		}
		num, err := strconv.Atoi(parts[1])
		if err != nil || num <= 0 || num > maxNum {
			continue
		}
		fd := fs.ByNumber(protoreflect.FieldNumber(num))
		if fd == nil || fd.IsList() || fd.IsMap() || fd.ContainingOneof() != nil {
			continue
		}
		gf := goField{off: sf.Offset}
		if fd.Kind() == protoreflect.BytesKind {
			if sf.Type.Kind() != reflect.Slice || sf.Type.Elem().Kind() != reflect.Uint8 {
				continue
			}
			gf.kind = kindBytes
			l.fields[num], l.ok[num] = gf, true
			continue
		}
		if sf.Type.Kind() != reflect.Pointer {
			continue
		}
		et := sf.Type.Elem()
		switch fd.Kind() {
		case protoreflect.MessageKind:
			if et.Kind() != reflect.Struct {
				continue
			}
			gf.msg = newGoLayout(et, fd.Message(), seen)
		case protoreflect.Uint64Kind:
			gf.kind = kindUint64
		case protoreflect.Int64Kind:
			gf.kind = kindInt64
		case protoreflect.Uint32Kind:
			gf.kind = kindUint32
		case protoreflect.Int32Kind, protoreflect.EnumKind:
			gf.kind = kindInt32
		case protoreflect.BoolKind:
			gf.kind = kindBool
		case protoreflect.StringKind:
			gf.kind = kindString
		case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
			gf.kind = kindFixed32
		case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
			gf.kind = kindFixed64
		default:
			continue
		}
		if want := goScalarType(fd.Kind()); want != reflect.Invalid && et.Kind() != want {
			continue
		}
		l.fields[num], l.ok[num] = gf, true
	}
	return l
}

// goScalarType is the Go kind protoc-gen-go gives a scalar of kind k
// (Invalid: not checked here).
func goScalarType(k protoreflect.Kind) reflect.Kind {
	switch k {
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return reflect.Uint64
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		return reflect.Int64
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return reflect.Uint32
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind, protoreflect.EnumKind:
		return reflect.Int32
	case protoreflect.BoolKind:
		return reflect.Bool
	case protoreflect.StringKind:
		return reflect.String
	case protoreflect.FloatKind:
		return reflect.Float32
	case protoreflect.DoubleKind:
		return reflect.Float64
	}
	return reflect.Invalid
}

// mergeTemplate is a clean message's bytes, the mask of the bits another
// message may change (wireTemplate), its shape (wireSchema.shape), and
// where in a Go message of that shape its varints go.
type mergeTemplate struct {
	wireTemplate
	shape []uint32
	hits  int    // messages it matched since it was made
	ver   uint64 // counts builds: a message shaped by an older one is compared again
	// cmdType is a command's type, when it has the one sub-command of
	// that type (-2 otherwise); -1 for other messages.
	cmdType int32
	nested  []goPointer // the nested messages, each after its parent
	stores  []varintStore
	nvar    int    // stores[:nvar] are not fixed
	strs    []span // string contents, which must be equal
}

// goPointer is a pointer field of a struct: of the root message (parent
// -1) or of mergeTemplate.nested[parent].
type goPointer struct {
	parent int32
	off    uintptr
}

// varintStore is a field of the template's message and where its value
// is in the message's bytes.
type varintStore struct {
	field goPointer // the field: a pointer to the value (a []byte itself for kindBytes)
	off   uint32    // of the value in the message bytes
	len   uint32    // of a string or bytes value
	n     uint8     // of a varint
	kind  varintKind
	fixed bool // the value's bytes are the template's (an enum, a fixed32 or fixed64)
}

type span struct{ off, n int }

// templates are the templates of one reused message kind, most recently
// used first; backoff counts templates not to make after one that never
// matched (the messages are too varied for templates).
type templates struct {
	t       [2]*mergeTemplate
	backoff int
}

// templateBackoff is how many templates are not made after one that never
// matched.
const templateBackoff = 16

// templateMaxBytes bounds the messages templates are made of.
const templateMaxBytes = 256

// build makes b, clean and of shape shape, the template. It reports false
// when b has something a template cannot replay.
func (t *mergeTemplate) build(ws *wireSchema, l *goLayout, b []byte, shape []uint32) bool {
	t.valid = false
	t.ver++
	t.stores, t.strs, t.nested = t.stores[:0], t.strs[:0], t.nested[:0]
	if len(b) > templateMaxBytes || l == nil {
		return false
	}
	t.prev = append(t.prev[:0], b...)
	t.mask = t.mask[:0]
	if !t.walk(ws, l, b, 0, -1, 0) {
		return false
	}
	// The values a matching message may change first, those it cannot
	// last (apply skips them when the message already holds them). A
	// field's stores stay in wire order: they are all on one side.
	slices.SortStableFunc(t.stores, func(a, b varintStore) int {
		switch {
		case a.fixed == b.fixed:
			return 0
		case b.fixed:
			return -1
		}
		return 1
	})
	t.nvar = len(t.stores)
	for t.nvar > 0 && t.stores[t.nvar-1].fixed {
		t.nvar--
	}
	t.shape = append(t.shape[:0], shape...)
	t.words()
	t.short, t.hi, t.wantLen = false, 0, 0
	t.hits = 0
	t.valid = true
	return true
}

// walk adds the fields of b, at offset base of the whole message, to the
// template; they belong to the struct nested[parent] (-1: the root).
func (t *mergeTemplate) walk(ws *wireSchema, l *goLayout, b []byte, base int, parent int32, depth int) bool {
	if depth > 100 {
		return false
	}
	fixed := func(n int) {
		for ; n > 0; n-- {
			t.mask = append(t.mask, 0xff)
		}
	}
	for q := 0; q < len(b); {
		num, typ, n := protowire.ConsumeTag(b[q:])
		if n < 0 || int(num) >= len(ws.fields) || int(num) >= len(l.ok) || !l.ok[num] {
			return false
		}
		fixed(n)
		q += n
		m := protowire.ConsumeFieldValue(num, typ, b[q:])
		if m < 0 {
			return false
		}
		f, g := &ws.fields[num], &l.fields[num]
		field := goPointer{parent: parent, off: g.off}
		store := varintStore{field: field, off: uint32(base + q), n: uint8(min(m, 255)), kind: g.kind}
		switch {
		case g.msg != nil:
			if typ != protowire.BytesType || f.msg == nil {
				return false
			}
			v, k := protowire.ConsumeVarint(b[q:])
			if k < 0 || int(v) != m-k {
				return false
			}
			fixed(k)
			t.nested = append(t.nested, field)
			if !t.walk(f.msg, g.msg, b[q+k:q+m], base+q+k, int32(len(t.nested)-1), depth+1) {
				return false
			}
			q += m
			continue
		case typ == protowire.VarintType && m < 10 && g.kind >= kindUint64 && g.kind <= kindBool:
			if f.enum != nil {
				fixed(m) // the value must stay one of the enum's
				store.fixed = true
			} else {
				for j := 0; j < m; j++ {
					t.mask = append(t.mask, 0x80) // the continuation bit stays
				}
			}
		case typ == protowire.BytesType && (g.kind == kindString || g.kind == kindBytes):
			_, k := protowire.ConsumeVarint(b[q:])
			fixed(k)
			for j := k; j < m; j++ {
				t.mask = append(t.mask, 0)
			}
			store.off, store.n = uint32(base+q+k), 0
			store.len = uint32(m - k)
		case typ == protowire.Fixed32Type && g.kind == kindFixed32, typ == protowire.Fixed64Type && g.kind == kindFixed64:
			fixed(m)
			store.fixed = true
		default:
			return false
		}
		t.stores = append(t.stores, store)
		q += m
	}
	return true
}

// apply stores the fields of b, which matched t, into the Go message at
// root, which holds a message of t's shape: the result is that of merging
// b into it (each field overwritten; strings and bytes allocated only when
// they differ from the ones held). held says root holds a message that
// matched t (this version of it): its fixed values are t's already and
// are not stored again. ptrs is scratch. It reports false when a pointer
// it follows is nil (root does not hold t's shape), having stored only
// part of b.
func (t *mergeTemplate) apply(b []byte, root unsafe.Pointer, held bool, ptrs []unsafe.Pointer) ([]unsafe.Pointer, bool) {
	ptrs = ptrs[:0]
	parent := func(g goPointer) unsafe.Pointer {
		if g.parent >= 0 {
			return ptrs[g.parent]
		}
		return root
	}
	for _, g := range t.nested {
		p := *(*unsafe.Pointer)(unsafe.Add(parent(g), g.off))
		if p == nil {
			return ptrs, false
		}
		ptrs = append(ptrs, p)
	}
	stores := t.stores
	if held {
		stores = stores[:t.nvar]
	}
	for i := range stores {
		s := &stores[i]
		at := unsafe.Add(parent(s.field), s.field.off)
		if s.kind == kindBytes {
			v := b[s.off : s.off+s.len]
			if dst := (*[]byte)(at); *dst == nil || string(*dst) != string(v) {
				*dst = append([]byte{}, v...)
			}
			continue
		}
		dst := *(*unsafe.Pointer)(at)
		if dst == nil {
			return ptrs, false
		}
		switch s.kind {
		case kindString:
			v := b[s.off : s.off+s.len]
			if p := (*string)(dst); *p != string(v) {
				*p = string(v)
			}
			continue
		case kindFixed32:
			*(*uint32)(dst) = binary.LittleEndian.Uint32(b[s.off:])
			continue
		case kindFixed64:
			*(*uint64)(dst) = binary.LittleEndian.Uint64(b[s.off:])
			continue
		}
		x := b[s.off : s.off+uint32(s.n)]
		var v uint64
		switch s.n {
		case 1:
			v = uint64(x[0])
		case 2:
			v = uint64(x[0]&0x7f) | uint64(x[1])<<7
		default:
			v, _ = protowire.ConsumeVarint(x)
		}
		switch s.kind {
		case kindUint64:
			*(*uint64)(dst) = v
		case kindInt64:
			*(*int64)(dst) = int64(v)
		case kindUint32:
			*(*uint32)(dst) = uint32(v)
		case kindInt32:
			*(*int32)(dst) = int32(v)
		case kindBool:
			*(*bool)(dst) = protowire.DecodeBool(v)
		}
	}
	return ptrs, true
}
