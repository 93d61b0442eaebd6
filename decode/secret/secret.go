// Package secret is pulsarscope's one definition of a secret: which fields
// of the Pulsar schema hold credentials, which strings look like
// credentials whatever field carries them, and how either is redacted.
// Every output asks it: the one-line summary, the -V tree, the -x hex dump,
// NDJSON, transcripts, diff, stats, the TUI and the filter environment.
//
// # Secret fields
//
// The rule is applied to the schema's descriptors (decode/pulsarapi) when
// it is first asked, so a field added to the schema later is covered
// without anyone updating a list. A field is a secret when it is a string
// or bytes field and its name, split at '_', is "auth_data" or ends in
// "auth_data" (auth_data, original_auth_data: CommandConnect,
// CommandLookupTopic, CommandPartitionedTopicMetadata, and AuthData, the
// credentials of AUTH_CHALLENGE and AUTH_RESPONSE), or holds one of the
// words password, passwd, secret, secrets, credential, credentials, token
// (no field of the current schema does; a future one that did would be
// covered).
//
// # Credentials by shape
//
// A JSON Web Token (three base64url parts joined by '.', the first
// starting "eyJ") or the value after "Bearer " in any string field (error
// messages, properties, names, topics) or bytes field is redacted too, in
// place: the rest of the value is kept.
//
// A redacted value is replaced by Marker(n), n being the secret's length in
// bytes, so that a reader still sees that it was there and how long it was.
package secret

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// words are the name parts that make a string or bytes field a secret on
// their own.
var words = map[string]bool{
	"password": true, "passwd": true, "secret": true, "secrets": true,
	"credential": true, "credentials": true, "token": true,
}

// IsSecretName reports whether a field of this name (a string or bytes
// field) holds credentials, by the package's rule. It is the rule itself;
// Field applies it to a descriptor.
func IsSecretName(name string) bool {
	parts := strings.Split(name, "_")
	for i, p := range parts {
		if words[strings.ToLower(p)] {
			return true
		}
		if i > 0 && strings.EqualFold(p, "data") && strings.EqualFold(parts[i-1], "auth") {
			return i == len(parts)-1
		}
	}
	return false
}

// Field flags, by field index in msgInfo.flags.
const (
	fSecret uint8 = 1 << iota // a secret field
	fText                     // a string or bytes field (credentials by shape)
	fReach                    // a message field whose type can hold either
)

// msgInfo is what Redact needs to know of one message type.
type msgInfo struct {
	reach bool    // can hold a secret field or a string or bytes, at any depth
	flags []uint8 // by field index
	rel   []int   // the indexes of the fields with flags: what needs looks at
}

// finish lists in's relevant fields.
func (in *msgInfo) finish() *msgInfo {
	in.rel = in.rel[:0]
	for i, f := range in.flags {
		if f != 0 {
			in.rel = append(in.rel, i)
		}
	}
	return in
}

// rule is the secret fields of the schema, derived once from its
// descriptors.
type rule struct {
	msgs   map[protoreflect.MessageDescriptor]*msgInfo
	fields []string        // full names of the secret fields, sorted
	names  map[string]bool // their (short) names
}

var schemaRule = sync.OnceValue(func() *rule {
	var all []protoreflect.MessageDescriptor
	var collect func(protoreflect.MessageDescriptors)
	collect = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			all = append(all, ms.Get(i))
			collect(ms.Get(i).Messages())
		}
	}
	collect(pulsarapi.File_pulsar_api_proto.Messages())
	r := &rule{msgs: map[protoreflect.MessageDescriptor]*msgInfo{}, names: map[string]bool{}}
	for _, md := range all {
		in := describe(md)
		r.msgs[md] = in
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			if in.flags[i]&fSecret != 0 {
				r.fields = append(r.fields, string(fs.Get(i).FullName()))
				r.names[string(fs.Get(i).Name())] = true
			}
		}
	}
	sort.Strings(r.fields)
	defer func() {
		for _, in := range r.msgs {
			in.finish()
		}
	}()
	// reach: a fixed point over the message graph.
	for changed := true; changed; {
		changed = false
		for _, md := range all {
			in := r.msgs[md]
			fs := md.Fields()
			for i := 0; i < fs.Len(); i++ {
				sub := fs.Get(i).Message()
				if sub != nil && in.flags[i]&fReach == 0 && r.msgs[sub] != nil && r.msgs[sub].reach {
					in.flags[i] |= fReach
					in.reach, changed = true, true
				}
			}
		}
	}
	return r
})

// describe is the msgInfo of md from its own fields; fReach is the
// caller's to set (the schema's fixed point, or every message field of a
// message not of the schema).
func describe(md protoreflect.MessageDescriptor) *msgInfo {
	fs := md.Fields()
	in := &msgInfo{flags: make([]uint8, fs.Len())}
	for i := 0; i < fs.Len(); i++ {
		f := fs.Get(i)
		if f.Kind() == protoreflect.StringKind || f.Kind() == protoreflect.BytesKind {
			in.flags[i] |= fText
			in.reach = true
			if IsSecretName(string(f.Name())) {
				in.flags[i] |= fSecret
			}
		}
	}
	return in
}

// info returns md's msgInfo; a message not of the schema is described on
// the spot, every message field of it taken as reaching.
func info(md protoreflect.MessageDescriptor) *msgInfo {
	if in := schemaRule().msgs[md]; in != nil {
		return in
	}
	in := describe(md)
	fs := md.Fields()
	for i := 0; i < fs.Len(); i++ {
		if fs.Get(i).Message() != nil {
			in.flags[i] |= fReach
			in.reach = true
		}
	}
	return in.finish()
}

// Field reports whether fd holds credentials: the one answer every output
// asks for.
func Field(fd protoreflect.FieldDescriptor) bool {
	if fd == nil {
		return false
	}
	flags := info(fd.ContainingMessage()).flags
	return fd.Index() < len(flags) && flags[fd.Index()]&fSecret != 0
}

// Name reports whether a field of the schema with this short name is a
// secret in some message: for outputs that know fields by name only
// (transcripts, whose JSON members are field names).
func Name(name string) bool { return schemaRule().names[name] }

// Fields lists the full names of the schema's secret fields, sorted.
func Fields() []string { return append([]string(nil), schemaRule().fields...) }

// Marker returns the text that replaces a secret of n bytes.
func Marker(n int) string { return "<redacted " + strconv.Itoa(n) + " bytes>" }

// Redact returns m with every secret field's value replaced by Marker(n)
// and every credential-shaped part of its strings by Marker(n), at any
// depth. m itself is never modified: when it holds something to redact the
// result is a deep copy, otherwise m itself is returned. A nil m is
// returned as is.
func Redact[M proto.Message](m M) M {
	var zero M
	if any(m) == any(zero) {
		return m
	}
	pm := m.ProtoReflect()
	if out := RedactMessage(pm); out != pm {
		return out.Interface().(M)
	}
	return m
}

// RedactMessage is Redact of a protoreflect.Message (a sub-command, say):
// m itself when it holds nothing to redact, else a redacted copy.
func RedactMessage(m protoreflect.Message) protoreflect.Message {
	if m == nil || !m.IsValid() || !needs(m) {
		return m
	}
	out := proto.Clone(m.Interface()).ProtoReflect()
	redact(out)
	return out
}

// Values appends to dst the values of m's secret fields, at any depth (for
// masking them wherever else they lie in a frame).
func Values(dst [][]byte, m protoreflect.Message) [][]byte {
	if !info(m.Descriptor()).reach {
		return dst
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		vals := []protoreflect.Value{v}
		if fd.IsList() {
			vals = vals[:0]
			for i := 0; i < v.List().Len(); i++ {
				vals = append(vals, v.List().Get(i))
			}
		}
		for _, v := range vals {
			switch {
			case Field(fd) && fd.Kind() == protoreflect.BytesKind:
				dst = append(dst, v.Bytes())
			case Field(fd):
				dst = append(dst, []byte(v.String()))
			case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
				dst = Values(dst, v.Message())
			}
		}
		return true
	})
	return dst
}

// Needs reports whether m holds anything Redact would replace.
func Needs(m proto.Message) bool {
	if m == nil {
		return false
	}
	pm := m.ProtoReflect()
	return pm.IsValid() && needs(pm)
}

func needs(m protoreflect.Message) bool {
	in := info(m.Descriptor())
	if !in.reach {
		return false
	}
	if len(in.rel) <= maxProbed {
		// Has on each field that matters: no Value is made for the
		// fields that do not (a message field's costs a reflect lookup).
		fs := m.Descriptor().Fields()
		for _, i := range in.rel {
			fd := fs.Get(i)
			if m.Has(fd) && fieldNeeds(in.flags[i], fd, m.Get(fd)) {
				return true
			}
		}
		return false
	}
	c, _ := checkers.Get().(*checker)
	if c == nil {
		c = newChecker()
	}
	c.found, c.in = false, in
	m.Range(c.visit)
	found := c.found
	c.in = nil
	checkers.Put(c)
	return found
}

// maxProbed is how many fields that matter a message may have for needs to
// probe them one by one rather than Range over the fields set (BaseCommand,
// with a field per command, is ranged).
const maxProbed = 24

// fieldNeeds is needs of the value v of field fd, set, with flags.
func fieldNeeds(flags uint8, fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	switch {
	case flags == 0:
		return false
	case flags&fSecret != 0:
		return true
	case fd.IsList():
		l := v.List()
		for i := 0; i < l.Len(); i++ {
			if valueNeeds(fd, l.Get(i)) {
				return true
			}
		}
		return false
	case fd.IsMap():
		found := false
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			found = (isStringKey(k) && HasCredential(k.String())) || valueNeeds(fd.MapValue(), mv)
			return !found
		})
		return found
	}
	return valueNeeds(fd, v)
}

// checker is needs' Range callback, pooled so that needs allocates
// nothing (a closure would escape).
type checker struct {
	found bool
	in    *msgInfo
	visit func(protoreflect.FieldDescriptor, protoreflect.Value) bool
}

// checkers holds idle checkers (no New: newChecker refers to needs).
var checkers sync.Pool

func newChecker() *checker {
	c := &checker{}
	c.visit = func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		c.found = fieldNeeds(c.in.flags[fd.Index()], fd, v)
		return !c.found
	}
	return c
}

func isStringKey(k protoreflect.MapKey) bool { _, ok := k.Interface().(string); return ok }

// valueNeeds is needs of one value of fd (a message is checked by a
// checker of its own).
func valueNeeds(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return HasCredential(v.String())
	case protoreflect.BytesKind:
		return HasCredentialBytes(v.Bytes())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return needs(v.Message())
	}
	return false
}

func redact(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case Field(fd) && fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				l.Set(i, markerValue(fd, l.Get(i)))
			}
		case Field(fd):
			m.Set(fd, markerValue(fd, v))
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if nv, ok := redactValue(fd, l.Get(i)); ok {
					l.Set(i, nv)
				}
			}
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if nv, ok := redactValue(fd.MapValue(), mv); ok {
					mp.Set(k, nv)
				}
				return true
			})
		default:
			if nv, ok := redactValue(fd, v); ok {
				m.Set(fd, nv)
			}
		}
		return true
	})
}

func markerValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	if fd.Kind() == protoreflect.BytesKind {
		return protoreflect.ValueOfBytes([]byte(Marker(len(v.Bytes()))))
	}
	return protoreflect.ValueOfString(Marker(len(v.String())))
}

// redactValue returns the redacted form of a non-secret field's value and
// whether it must be stored back (messages are redacted in place).
func redactValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s := v.String(); HasCredential(s) {
			return protoreflect.ValueOfString(Scrub(s)), true
		}
	case protoreflect.BytesKind:
		if b := v.Bytes(); HasCredentialBytes(b) {
			return protoreflect.ValueOfBytes([]byte(Scrub(string(b)))), true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if info(fd.Message()).reach {
			redact(v.Message())
		}
	}
	return v, false
}
