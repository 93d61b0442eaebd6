package diff

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/render"
)

// messageIDName is the protobuf message whose ledgerId/entryId pair is the
// message_id pseudo-field.
const messageIDName = "MessageIdData"

// fieldWriter renders protobuf messages as compact JSON, fields in schema
// order, applying the normalisation rules; renumbering state is the
// stream's.
type fieldWriter struct {
	rules       map[string]Mode
	castagnoli  *crc32.Table
	showSecrets bool // record secrets instead of redacting them
}

// appendMessage appends m as a JSON object.
func (w *fieldWriter) appendMessage(b []byte, m protoreflect.Message, st *stream) []byte {
	b = append(b, '{')
	b = w.appendFields(b, m, st, false)
	return append(b, '}')
}

// appendFields appends m's set fields as JSON members; more says whether
// members were written before.
func (w *fieldWriter) appendFields(b []byte, m protoreflect.Message, st *stream, more bool) []byte {
	fds := m.Descriptor().Fields()
	isID := m.Descriptor().Name() == messageIDName
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if !m.Has(fd) {
			continue
		}
		name := string(fd.Name())
		if isID && (name == "ledgerId" || name == "entryId") {
			if name == "entryId" {
				continue
			}
			b, more = w.appendMessageID(b, m, st, more)
			continue
		}
		mode := w.rules[name]
		if mode == Ignore {
			continue
		}
		if more {
			b = append(b, ',')
		}
		more = true
		b = appendString(b, name)
		b = append(b, ':')
		v := m.Get(fd)
		switch {
		case fd.IsList() && isKeyed(fd):
			b = w.appendKeyed(b, fd, v.List(), st)
		case fd.IsList():
			l := v.List()
			b = append(b, '[')
			for j := 0; j < l.Len(); j++ {
				if j > 0 {
					b = append(b, ',')
				}
				b = w.appendValue(b, fd, l.Get(j), mode, st)
			}
			b = append(b, ']')
		case fd.IsMap():
			// The Pulsar schema has no map fields; render them opaquely.
			b = appendString(b, "<map>")
		default:
			b = w.appendValue(b, fd, v, mode, st)
		}
	}
	return b
}

// appendMessageID writes the ledgerId/entryId pair of a MessageIdData as
// the message_id rule says: renumbered as "ledger_entry":"mN", dropped, or
// kept as they are. The "earliest" marker id (both parts all ones) is
// always kept; an id with one part all ones (a mark-delete position before
// the first entry of a ledger) is renumbered like any other, so that both
// sides are normalised alike.
func (w *fieldWriter) appendMessageID(b []byte, m protoreflect.Message, st *stream, more bool) ([]byte, bool) {
	mode := w.rules[PseudoMessageID]
	if mode == Ignore {
		return b, more
	}
	fds := m.Descriptor().Fields()
	ledger := m.Get(fds.ByName("ledgerId")).Uint()
	entry := m.Get(fds.ByName("entryId")).Uint()
	if more {
		b = append(b, ',')
	}
	if mode == Renumber && (ledger != math.MaxUint64 || entry != math.MaxUint64) {
		b = append(b, `"ledger_entry":`...)
		return appendString(b, st.messageID(ledger, entry)), true
	}
	b = append(b, `"ledgerId":`...)
	b = strconv.AppendUint(b, ledger, 10)
	b = append(b, `,"entryId":`...)
	return strconv.AppendUint(b, entry, 10), true
}

// isKeyed reports whether fd is a repeated key/value message (KeyValue,
// KeyLongValue): clients fill those from maps, in random order.
func isKeyed(fd protoreflect.FieldDescriptor) bool {
	if fd.Kind() != protoreflect.MessageKind {
		return false
	}
	k := fd.Message().Fields().ByName("key")
	return k != nil && k.Kind() == protoreflect.StringKind && fd.Message().Fields().Len() == 2
}

// appendKeyed writes a repeated key/value field sorted by key (stable).
func (w *fieldWriter) appendKeyed(b []byte, fd protoreflect.FieldDescriptor, l protoreflect.List, st *stream) []byte {
	type kv struct {
		key string
		out []byte
	}
	kf := fd.Message().Fields().ByName("key")
	items := make([]kv, l.Len())
	for j := range items {
		m := l.Get(j).Message()
		items[j] = kv{m.Get(kf).String(), w.appendMessage(nil, m, st)}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].key < items[j].key })
	b = append(b, '[')
	for j, it := range items {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, it.out...)
	}
	return append(b, ']')
}

func (w *fieldWriter) appendValue(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value, mode Mode, st *stream) []byte {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return w.appendMessage(b, v.Message(), st)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendString(b, string(ev.Name()))
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10)
	case protoreflect.StringKind:
		if mode == Renumber {
			return appendString(b, st.name(string(fd.Name()), v.String()))
		}
		return appendString(b, v.String())
	case protoreflect.BytesKind:
		return appendBytes(b, v.Bytes())
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10)
	case protoreflect.FloatKind:
		return strconv.AppendFloat(b, v.Float(), 'g', -1, 32)
	case protoreflect.DoubleKind:
		return strconv.AppendFloat(b, v.Float(), 'g', -1, 64)
	}
	return appendString(b, v.String())
}

// appendBytes writes printable UTF-8 bytes (such as the redaction marker or
// a schema) as a string and anything else as "base64:…".
func appendBytes(b []byte, v []byte) []byte {
	if utf8.Valid(v) {
		printable := true
		for _, r := range string(v) {
			if r < 0x20 && r != '\n' && r != '\t' {
				printable = false
				break
			}
		}
		if printable {
			return appendString(b, string(v))
		}
	}
	return appendString(b, "base64:"+base64.StdEncoding.EncodeToString(v))
}

// appendString appends s as a JSON string without HTML escaping.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x7f {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else if !render.Printable(r, size) { // the sanitiser (render/sanitize.go)
			b = render.AppendJSONEscape(b, r)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendPayload adds the payload members of a SEND or MESSAGE frame:
// broker entry metadata, message metadata, payload size and digest, batch
// entries.
func (w *fieldWriter) appendPayload(b []byte, f *decode.Frame, st *stream, more bool) []byte {
	member := func(name string) {
		if more {
			b = append(b, ',')
		}
		more = true
		b = appendString(b, name)
		b = append(b, ':')
	}
	if f.BrokerEntryMetadata != nil && w.rules["broker_entry_metadata"] != Ignore {
		member("broker_entry_metadata")
		b = w.appendMessage(b, render.Redacted(f.BrokerEntryMetadata, w.showSecrets).ProtoReflect(), st)
	}
	if f.Metadata != nil && w.rules["metadata"] != Ignore {
		member("metadata")
		b = w.appendMessage(b, render.Redacted(f.Metadata, w.showSecrets).ProtoReflect(), st)
	}
	if f.Metadata != nil && w.rules[PseudoPayload] != Ignore {
		member("payload")
		b = append(b, `{"size":`...)
		b = strconv.AppendInt(b, int64(len(f.Payload)), 10)
		if f.Uncompressed != nil {
			// CRC32-C (hardware-accelerated) of the uncompressed bytes: a
			// content digest that does not change with the codec.
			b = append(b, `,"uncompressed_size":`...)
			b = strconv.AppendInt(b, int64(len(f.Uncompressed)), 10)
			b = append(b, `,"crc32c":"`...)
			b = hex.AppendEncode(b, binary.BigEndian.AppendUint32(nil, crc32.Checksum(f.Uncompressed, w.castagnoli)))
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	if len(f.Entries) > 0 && w.rules[PseudoEntries] == Summarise {
		member("entries")
		b = append(b, `{"count":`...)
		b = strconv.AppendInt(b, int64(len(f.Entries)), 10)
		b = append(b, '}')
	} else if len(f.Entries) > 0 && w.rules[PseudoEntries] != Ignore {
		member("entries")
		b = append(b, '[')
		for i, e := range f.Entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			m := false
			if e.Metadata != nil {
				b = append(b, `"metadata":`...)
				b = w.appendMessage(b, render.Redacted(e.Metadata, w.showSecrets).ProtoReflect(), st)
				m = true
			}
			if m {
				b = append(b, ',')
			}
			b = append(b, `"size":`...)
			b = strconv.AppendInt(b, int64(len(e.Payload)), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return b
}
