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

// rule is the secret fields of the schema, derived once from its
// descriptors.
type rule struct {
	fields map[protoreflect.FullName]bool // secret fields by full name
	names  map[string]bool                // their (short) names
	// reach says which messages can hold a secret field or a string
	// (a credential by shape), at any depth: Redact skips the others.
	reach map[protoreflect.FullName]bool
}

var schemaRule = sync.OnceValue(func() *rule {
	r := &rule{fields: map[protoreflect.FullName]bool{}, names: map[string]bool{}, reach: map[protoreflect.FullName]bool{}}
	fd := pulsarapi.File_pulsar_api_proto
	msgs := fd.Messages()
	var all []protoreflect.MessageDescriptor
	var collect func(protoreflect.MessageDescriptors)
	collect = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			all = append(all, ms.Get(i))
			collect(ms.Get(i).Messages())
		}
	}
	collect(msgs)
	for _, md := range all {
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			f := fs.Get(i)
			if (f.Kind() == protoreflect.StringKind || f.Kind() == protoreflect.BytesKind) && IsSecretName(string(f.Name())) {
				r.fields[f.FullName()] = true
				r.names[string(f.Name())] = true
			}
		}
	}
	// reach: a fixed point over the message graph.
	for changed := true; changed; {
		changed = false
		for _, md := range all {
			if r.reach[md.FullName()] {
				continue
			}
			fs := md.Fields()
			for i := 0; i < fs.Len(); i++ {
				f := fs.Get(i)
				if f.Kind() == protoreflect.StringKind || f.Kind() == protoreflect.BytesKind || r.fields[f.FullName()] ||
					(f.Message() != nil && r.reach[f.Message().FullName()]) {
					r.reach[md.FullName()] = true
					changed = true
					break
				}
			}
		}
	}
	return r
})

// Field reports whether fd holds credentials: the one answer every output
// asks for.
func Field(fd protoreflect.FieldDescriptor) bool {
	return fd != nil && schemaRule().fields[fd.FullName()]
}

// Name reports whether a field of the schema with this short name is a
// secret in some message: for outputs that know fields by name only
// (transcripts, whose JSON members are field names).
func Name(name string) bool { return schemaRule().names[name] }

// Fields lists the full names of the schema's secret fields, sorted.
func Fields() []string {
	r := schemaRule()
	out := make([]string, 0, len(r.fields))
	for n := range r.fields {
		out = append(out, string(n))
	}
	sort.Strings(out)
	return out
}

// mayHold reports whether a message of type md can hold a secret field or
// a string at any depth.
func mayHold(md protoreflect.MessageDescriptor) bool {
	r := schemaRule()
	if _, ours := r.reach[md.FullName()]; ours || md.ParentFile() == pulsarapi.File_pulsar_api_proto {
		return r.reach[md.FullName()]
	}
	return true // not of the schema: check it all
}

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
	if !pm.IsValid() || !needs(pm) {
		return m
	}
	out := proto.Clone(m).(M)
	redact(out.ProtoReflect())
	return out
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
	if !mayHold(m.Descriptor()) {
		return false
	}
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case Field(fd):
			found = true
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && !found; i++ {
				found = valueNeeds(fd, l.Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				found = (k.Interface() != nil && isStringKey(k) && HasCredential(k.String())) || valueNeeds(fd.MapValue(), mv)
				return !found
			})
		default:
			found = valueNeeds(fd, v)
		}
		return !found
	})
	return found
}

func isStringKey(k protoreflect.MapKey) bool { _, ok := k.Interface().(string); return ok }

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
		if mayHold(fd.Message()) {
			redact(v.Message())
		}
	}
	return v, false
}
