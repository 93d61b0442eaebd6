package render

import (
	"bytes"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/decode/secret"
)

// Redacted returns m with its secrets replaced (secret.Redact), or m itself
// when showSecrets is set.
func Redacted[M proto.Message](m M, showSecrets bool) M {
	if showSecrets {
		return m
	}
	return secret.Redact(m)
}

// RedactedSub is SubCommand(Redacted(cmd, showSecrets)) without copying
// or searching the whole command: the sub-command alone is redacted.
func RedactedSub(cmd *pulsarapi.BaseCommand, showSecrets bool) protoreflect.Message {
	sub := SubCommand(cmd)
	if sub == nil || showSecrets {
		return sub
	}
	return secret.RedactMessage(sub)
}

// RedactedDetail returns a problem detail with its credentials by shape
// replaced, unless showSecrets.
func RedactedDetail(s string, showSecrets bool) string {
	if showSecrets {
		return s
	}
	return secret.Scrub(s)
}

// regionTypes says which message each protobuf region of a frame holds.
var regionTypes = map[string]protoreflect.MessageDescriptor{
	decode.RegionCommand:  (*pulsarapi.BaseCommand)(nil).ProtoReflect().Descriptor(),
	decode.RegionMetadata: (*pulsarapi.MessageMetadata)(nil).ProtoReflect().Descriptor(),
}

// SecretRanges appends to dst the byte ranges of f.Raw that hold secrets:
// the values of secret fields and credentials by shape, found by walking
// the command's and the metadata's wire format (secret.Ranges), so frames
// whose protobuf does not parse are covered too; batch entries' metadata
// when the payload is not compressed; and, when the command was decoded,
// every other place in the frame where one of its secret values lies.
func SecretRanges(dst [][2]int, f *decode.Frame) [][2]int {
	raw := f.Raw
	for _, r := range f.Regions {
		if r.Start < 0 || r.End > len(raw) || r.Start > r.End {
			continue
		}
		if md := regionTypes[r.Name]; md != nil {
			dst = secret.Ranges(dst, raw[r.Start:r.End], r.Start, md)
		}
		if r.Name == decode.RegionPayload && f.Metadata != nil && len(f.Entries) > 0 &&
			f.Metadata.GetCompression() == pulsarapi.CompressionType_NONE && len(f.Metadata.GetEncryptionKeys()) == 0 {
			dst = entryRanges(dst, raw[r.Start:r.End], r.Start, f.Entries)
		}
	}
	if f.Command != nil && secret.Needs(f.Command) {
		for _, s := range secret.Values(nil, f.Command.ProtoReflect()) {
			for i := 0; len(s) > 0; {
				j := bytes.Index(raw[i:], s)
				if j < 0 {
					break
				}
				dst = append(dst, [2]int{i + j, i + j + len(s)})
				i += j + len(s)
			}
		}
	}
	return dst
}

var smmType = (*pulsarapi.SingleMessageMetadata)(nil).ProtoReflect().Descriptor()

// entryRanges finds the secrets of an uncompressed batch's entries in its
// bytes b: the decoder split the batch (f.Entries, in order), so each
// entry's metadata is found after the previous entry, not parsed again.
func entryRanges(dst [][2]int, b []byte, base int, entries []decode.Entry) [][2]int {
	at := 0
	for _, e := range entries {
		if len(e.RawMetadata) == 0 {
			break
		}
		j := bytes.Index(b[at:], e.RawMetadata)
		if j < 0 {
			break
		}
		dst = secret.Ranges(dst, e.RawMetadata, base+at+j, smmType)
		at += j + len(e.RawMetadata) + len(e.Payload)
		if at > len(b) {
			break
		}
	}
	return dst
}

// MaskedRaw returns the frame's raw bytes for a hex dump: raw itself when
// showSecrets is set or it holds no secret (SecretRanges), otherwise a copy
// in which every secret byte is replaced by '*'.
func MaskedRaw(f *decode.Frame, showSecrets bool) []byte {
	if showSecrets {
		return f.Raw
	}
	rs := SecretRanges(nil, f)
	if len(rs) == 0 {
		return f.Raw
	}
	out := bytes.Clone(f.Raw)
	for _, r := range rs {
		for i := r[0]; i < r[1] && i < len(out); i++ {
			out[i] = '*'
		}
	}
	return out
}
