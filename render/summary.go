package render

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// SubCommand returns the one sub-command message set on cmd (e.g. the
// CommandSend of a SEND), or nil when none is set.
func SubCommand(cmd *pulsarapi.BaseCommand) protoreflect.Message {
	if cmd == nil {
		return nil
	}
	sf := subFinders.Get().(*subFinder)
	cmd.ProtoReflect().Range(sf.visit)
	sub := sf.sub
	sf.sub = nil
	subFinders.Put(sf)
	return sub
}

// subFinder is SubCommand's Range callback; pooled, so that SubCommand
// allocates nothing (a closure would escape).
type subFinder struct {
	sub   protoreflect.Message
	visit func(protoreflect.FieldDescriptor, protoreflect.Value) bool
}

var subFinders = sync.Pool{New: func() any {
	sf := &subFinder{}
	sf.visit = func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.MessageKind && fd.Cardinality() != protoreflect.Repeated {
			sf.sub = v.Message()
			return false
		}
		return true
	}
	return sf
}}

// maxListed is how many elements of a repeated field a summary line shows.
const maxListed = 4

// AppendSummary appends the identifying fields of a frame's command to b:
// every populated scalar of the sub-command in schema order, message ids as
// ledger:entry, secrets redacted unless showSecrets, then payload facts.
func AppendSummary(b []byte, f *decode.Frame, showSecrets bool) []byte {
	if sub := RedactedSub(f.Command, showSecrets); sub != nil {
		b = appendFields(b, sub)
	}
	if f.Metadata != nil {
		b = appendPayloadFacts(b, f, Redacted(f.Metadata, showSecrets))
	}
	return b
}

func appendFields(b []byte, m protoreflect.Message) []byte {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			b = appendList(b, fd, v.List())
		case fd.Kind() == protoreflect.MessageKind:
			if isMessageID(fd.Message()) {
				b = appendSep(b, fd)
				b = appendMessageID(b, v.Message())
			} else if ad, ok := v.Message().Interface().(*pulsarapi.AuthData); ok {
				b = appendSep(b, fd)
				b = append(b, "{auth_method_name="...)
				b = appendText(b, ad.GetAuthMethodName(), false)
				if ad.AuthData != nil {
					b = append(b, " auth_data="...)
					b = appendBytes(b, ad.AuthData)
				}
				b = append(b, '}')
			}
		case fd.Kind() == protoreflect.BytesKind:
			b = appendSep(b, fd)
			b = appendBytes(b, v.Bytes())
		default:
			b = appendSep(b, fd)
			b = appendScalar(b, fd, v)
		}
	}
	return b
}

func appendSep(b []byte, fd protoreflect.FieldDescriptor) []byte {
	if len(b) > 0 && b[len(b)-1] != ' ' {
		b = append(b, ' ')
	}
	b = append(b, fd.Name()...)
	return append(b, '=')
}

func appendScalar(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) []byte {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return append(b, ev.Name()...)
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10)
	case protoreflect.StringKind:
		return appendText(b, v.String(), false)
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool())
	case protoreflect.Uint64Kind, protoreflect.Uint32Kind, protoreflect.Fixed64Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.AppendFloat(b, v.Float(), 'g', -1, 64)
	default:
		return strconv.AppendInt(b, v.Int(), 10)
	}
}

// Strings longer than maxShown bytes are cut to their first shownPrefix
// bytes (at a rune boundary) in a one-line view, followed by "…(N bytes)":
// a line stays readable whatever a peer sends; JSON and -V keep it all.
const (
	maxShown    = 256
	shownPrefix = 64
)

// appendText writes a string value: bare when it is a plain word (unless
// quote), else quoted with its control characters escaped; elided when
// long.
func appendText(b []byte, s string, quote bool) []byte {
	n := len(s)
	if n > maxShown {
		cut := shownPrefix
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if quote || s == "" || strings.ContainsAny(s, " \t\n\"") || needsEscape(s) {
		b = strconv.AppendQuote(b, s)
	} else {
		b = append(b, s...)
	}
	if n > maxShown {
		b = append(b, "…("...)
		b = appendThousands(b, n)
		b = append(b, " bytes)"...)
	}
	return b
}

// appendThousands writes n with commas between groups of three digits.
func appendThousands(b []byte, n int) []byte {
	d := strconv.Itoa(n)
	for i, c := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, byte(c))
	}
	return b
}

func appendList(b []byte, fd protoreflect.FieldDescriptor, l protoreflect.List) []byte {
	b = appendSep(b, fd)
	b = append(b, '[')
	for i := 0; i < l.Len() && i < maxListed; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case fd.Kind() == protoreflect.MessageKind && isMessageID(fd.Message()):
			b = appendMessageID(b, l.Get(i).Message())
		case fd.Kind() == protoreflect.MessageKind:
			b = append(b, "{…}"...)
		case fd.Kind() == protoreflect.BytesKind:
			b = strconv.AppendInt(b, int64(len(l.Get(i).Bytes())), 10)
			b = append(b, 'B')
		default:
			b = appendScalar(b, fd, l.Get(i))
		}
	}
	if l.Len() > maxListed {
		b = append(b, ",+"...)
		b = strconv.AppendInt(b, int64(l.Len()-maxListed), 10)
	}
	return append(b, ']')
}

func isMessageID(md protoreflect.MessageDescriptor) bool {
	return md.Name() == "MessageIdData"
}

// appendMessageID writes ledger:entry, then :partition and :batch_index when set.
func appendMessageID(b []byte, m protoreflect.Message) []byte {
	id, ok := m.Interface().(*pulsarapi.MessageIdData)
	if !ok {
		return append(b, '?')
	}
	b = strconv.AppendUint(b, id.GetLedgerId(), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, id.GetEntryId(), 10)
	if id.Partition != nil && id.GetPartition() >= 0 {
		b = append(b, ":p"...)
		b = strconv.AppendInt(b, int64(id.GetPartition()), 10)
	}
	if id.BatchIndex != nil && id.GetBatchIndex() >= 0 {
		b = append(b, ":b"...)
		b = strconv.AppendInt(b, int64(id.GetBatchIndex()), 10)
	}
	return b
}

// appendBytes writes a bytes field: quoted when short printable text (a
// redaction marker is), else its length.
func appendBytes(b []byte, v []byte) []byte {
	if isPrintable(v) {
		return strconv.AppendQuote(b, string(v))
	}
	b = strconv.AppendInt(b, int64(len(v)), 10)
	return append(b, " bytes"...)
}

func isPrintable(v []byte) bool {
	if len(v) > 1024 {
		return false
	}
	for _, c := range v {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// appendPayloadFacts adds what the message metadata md (f's, redacted as
// the output asks) says about the payload.
func appendPayloadFacts(b []byte, f *decode.Frame, md *pulsarapi.MessageMetadata) []byte {
	b = append(b, " |"...)
	if md.ProducerName != nil {
		b = append(b, " producer="...)
		b = appendText(b, md.GetProducerName(), false)
	}
	b = append(b, " seq="...)
	b = strconv.AppendUint(b, md.GetSequenceId(), 10)
	if md.PartitionKey != nil {
		b = append(b, " key="...)
		b = appendText(b, md.GetPartitionKey(), true)
	}
	if md.NumMessagesInBatch != nil {
		b = append(b, " batch="...)
		b = strconv.AppendInt(b, int64(md.GetNumMessagesInBatch()), 10)
	}
	if md.Compression != nil && md.GetCompression() != pulsarapi.CompressionType_NONE {
		b = append(b, ' ')
		b = append(b, md.GetCompression().String()...)
	}
	if f.Encrypted() {
		b = append(b, " encrypted"...)
	}
	if md.Uuid != nil {
		b = append(b, " chunk="...)
		b = strconv.AppendInt(b, int64(md.GetChunkId()), 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(md.GetNumChunksFromMsg()), 10)
	}
	b = append(b, " payload="...)
	b = strconv.AppendInt(b, int64(len(f.Payload)), 10)
	b = append(b, 'B')
	if f.Checksum != nil {
		if f.Checksum.OK() {
			b = append(b, " crc=ok"...)
		} else {
			b = append(b, " crc=BAD"...)
		}
	}
	return b
}
