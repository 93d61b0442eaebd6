package secret

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Ranges appends to dst the byte ranges [start, end), offset by base, of
// what Redact would replace in the message of type md encoded in b: the
// values of secret fields and the credentials by shape in strings, at any
// depth. It walks the wire format itself (protowire), so it finds them in
// messages that do not unmarshal (a required field missing, a string that
// is not UTF-8, a field of the wrong wire type); where the encoding breaks
// off, or in fields the schema does not know, it looks for credentials by
// shape in the bytes that are left. It never fails and never allocates
// more than the ranges it returns.
func Ranges(dst [][2]int, b []byte, base int, md protoreflect.MessageDescriptor) [][2]int {
	return ranges(dst, b, base, md, 0)
}

// maxDepth bounds recursion on hostile nesting (protobuf's own limit).
const maxDepth = 100

func ranges(dst [][2]int, b []byte, base int, md protoreflect.MessageDescriptor, depth int) [][2]int {
	pos := 0
	for pos < len(b) {
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, b[pos+n:])
		if m < 0 {
			break
		}
		vstart, end := pos+n, pos+n+m
		pos = end
		if typ != protowire.BytesType {
			continue
		}
		v, k := protowire.ConsumeBytes(b[vstart:end])
		if k < 0 {
			break
		}
		inner := vstart + (k - len(v)) // where the value starts in b
		var fd protoreflect.FieldDescriptor
		if md != nil {
			fd = md.Fields().ByNumber(num)
		}
		switch {
		case fd == nil: // unknown to the schema: its bytes may be anything
			dst = shifted(dst, v, base+inner)
		case Field(fd):
			dst = append(dst, [2]int{base + inner, base + inner + len(v)})
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if depth < maxDepth && info(fd.Message()).reach {
				dst = ranges(dst, v, base+inner, fd.Message(), depth+1)
			} else if depth >= maxDepth {
				dst = shifted(dst, v, base+inner)
			}
		case fd.Kind() == protoreflect.StringKind, fd.Kind() == protoreflect.BytesKind:
			dst = shifted(dst, v, base+inner)
		}
	}
	if pos < len(b) { // the encoding broke off: look at what is left
		dst = shifted(dst, b[pos:], base+pos)
	}
	return dst
}

// shifted appends the credential spans of v, offset by base.
func shifted(dst [][2]int, v []byte, base int) [][2]int {
	if !HasCredentialBytes(v) {
		return dst
	}
	start := len(dst)
	dst = Spans(dst, v)
	for i := start; i < len(dst); i++ {
		dst[i][0] += base
		dst[i][1] += base
	}
	return dst
}
