package decode

import (
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/encoding/protowire"
)

// decodePayload decodes the part of a payload frame after the command:
// [0x0e02 size BrokerEntryMetadata] [0x0e01 CRC32-C] metadataSize
// MessageMetadata payload. rest starts at frame offset base.
func (d *Decoder) decodePayload(f *Frame, rest []byte, base int) {
	p := 0
	if len(rest) >= 2 && be16(rest) == MagicBrokerEntryMetadata {
		if len(rest) < 6 {
			f.addProblem(CodeBadMetadataSize, "broker entry metadata magic without its 4-byte size (%d bytes left)", len(rest))
			return
		}
		n := be32(rest[2:])
		if int64(n) > int64(len(rest)-6) {
			f.addProblem(CodeBadMetadataSize, "broker entry metadata size %d exceeds the %d bytes left", n, len(rest)-6)
			return
		}
		p = 6 + int(n)
		f.region(RegionBrokerEntryMetadata, base, base+p)
		bem := d.newBrokerEntryMetadata()
		if complete, err := d.unmarshal(rest[6:p], bem); err != nil {
			protoProblem(f, "broker entry metadata", err)
		} else {
			f.BrokerEntryMetadata = bem
			d.validate(bem, rest[6:p], "broker_entry_metadata", -1, complete)
			d.check.flush(f)
		}
		if len(rest)-p < 2 || be16(rest[p:]) != MagicChecksum {
			f.addProblem(CodeBadMagic, "broker entry metadata (0x0e02) not followed by the checksum magic 0x0e01 (got %s)", hexPrefix(rest[p:], 2))
			return
		}
	}

	var md *pulsarapi.MessageMetadata
	switch {
	case len(rest)-p >= 2 && be16(rest[p:]) == MagicChecksum:
		if len(rest)-p < 6 {
			f.addProblem(CodeBadMetadataSize, "checksum magic without a 4-byte checksum (%d bytes left)", len(rest)-p)
			return
		}
		sum := &d.fb.sum
		if d.opts.Retain {
			sum = new(Checksum)
		}
		sum.Stored = be32(rest[p+2:])
		sum.Computed = CRC32C(rest[p+6:])
		f.Checksum = sum
		f.region(RegionMagic, base+p, base+p+2)
		f.region(RegionChecksum, base+p+2, base+p+6)
		if !sum.OK() {
			f.addProblem(CodeChecksumMismatch, "stored CRC32-C 0x%08x, computed 0x%08x over %d bytes", sum.Stored, sum.Computed, len(rest)-p-6)
		}
		p += 6
	default:
		// Old protocol: metadataSize follows the command directly. Accept
		// it only when the metadata fits and parses; otherwise the bytes
		// are neither magic nor metadata.
		md = d.oldStyleMetadata(rest)
		if md == nil {
			f.addProblem(CodeBadMagic, "bytes after the command are %s: neither magic 0x0e01, 0x0e02 nor a plausible metadataSize and metadata", hexPrefix(rest, 4))
			return
		}
	}

	if len(rest)-p < 4 {
		f.addProblem(CodeBadMetadataSize, "no room for the 4-byte metadataSize (%d bytes left)", len(rest)-p)
		return
	}
	n := be32(rest[p:])
	if int64(n) > int64(len(rest)-p-4) {
		f.addProblem(CodeBadMetadataSize, "metadataSize %d exceeds the %d bytes left", n, len(rest)-p-4)
		return
	}
	mstart := p + 4
	mend := mstart + int(n)
	f.region(RegionMetadataSize, base+p, base+mstart)
	f.region(RegionMetadata, base+mstart, base+mend)
	f.region(RegionPayload, base+mend, base+len(rest))
	f.Payload = rest[mend:]
	complete, clean := false, false // old-style metadata: not checked yet
	if md == nil {
		var err error
		switch {
		case d.opts.Retain:
			md = new(pulsarapi.MessageMetadata)
			complete, err = d.unmarshal(rest[mstart:mend], md)
		case mend-mstart <= shapedMaxBytes:
			s := d.shapedMetadata()
			md = s.m
			clean, complete, err = unmarshalShaped(d, rest[mstart:mend], rest[mstart:], s, &d.tmpl[len(shapedTypes)], -1, true)
		default:
			md = d.newMetadata()
			complete, err = d.unmarshal(rest[mstart:mend], md)
		}
		if err != nil {
			protoProblem(f, "message metadata", err)
			return
		}
	}
	f.Metadata = md
	if !clean {
		d.validate(md, rest[mstart:mend], "metadata", -1, complete)
		d.check.flush(f)
	}
	d.decodeMessage(f, md, clean)
}

func (d *Decoder) oldStyleMetadata(rest []byte) *pulsarapi.MessageMetadata {
	if len(rest) < 4 {
		return nil
	}
	n := be32(rest)
	if int64(n) > int64(len(rest)-4) {
		return nil
	}
	md := d.newMetadata()
	if d.checkRepeated(rest[4:4+n], md) != nil || d.unm.Unmarshal(rest[4:4+n], md) != nil {
		return nil
	}
	return md
}

func hexPrefix(b []byte, n int) string {
	if len(b) < n {
		n = len(b)
	}
	if n == 0 {
		return "(nothing)"
	}
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2+2*n)
	out = append(out, "0x"...)
	for _, c := range b[:n] {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// IsEncrypted reports whether md describes an end-to-end encrypted payload
// (encryption_keys set: the producer encrypted it with a data key, itself
// encrypted under each key named).
func IsEncrypted(md *pulsarapi.MessageMetadata) bool {
	return len(md.GetEncryptionKeys()) > 0
}

// IsChunk reports whether md describes one chunk of a chunked message.
func IsChunk(md *pulsarapi.MessageMetadata) bool {
	return md != nil && md.GetNumChunksFromMsg() > 1
}

// hasUnknownField reports whether the unknown-fields blob b holds field num
// (a proto2 enum value outside the schema lands there).
func hasUnknownField(b []byte, num protowire.Number) bool {
	for len(b) > 0 {
		n, _, m := protowire.ConsumeField(b)
		if m < 0 {
			return false
		}
		if n == num {
			return true
		}
		b = b[m:]
	}
	return false
}

// decodeMessage decompresses the payload and splits batches. clean says
// md's bytes were clean (wireSchema.clean): no unknown field, every enum
// value known, so the codec is one of the schema's.
func (d *Decoder) decodeMessage(f *Frame, md *pulsarapi.MessageMetadata, clean bool) {
	const compressionField = 8
	if !clean && hasUnknownField(md.ProtoReflect().GetUnknown(), compressionField) {
		f.addProblem(CodeUnknownCompression, "compression codec not in the schema; payload left undecoded")
		return
	}
	if d.opts.SkipPayloadContents {
		// The codec is metadata: still checked.
		if c := md.GetCompression(); !clean && pulsarapi.CompressionType_name[int32(c)] == "" {
			f.addProblem(CodeUnknownCompression, "compression %d not supported", int32(c))
		}
		return
	}
	if IsEncrypted(md) {
		// Ciphertext (compressed, then encrypted, by the producer): no
		// decompression, no batch to split, no size to check without the
		// key. A fact of the frame (Frame.Encrypted), not a problem.
		return
	}
	if IsChunk(md) {
		// A chunk is a slice of the (maybe compressed) whole message:
		// neither decompressible nor splittable on its own.
		if md.GetCompression() == pulsarapi.CompressionType_NONE {
			f.Uncompressed = f.Payload
		}
		return
	}
	out, ok := d.decompress(f, md)
	if !ok {
		return
	}
	f.Uncompressed = out
	if md.NumMessagesInBatch != nil {
		d.splitBatch(f, out, md.GetNumMessagesInBatch())
	}
}

// newMetadata returns the MessageMetadata to decode into other than by
// unmarshalShaped: the reused one (no longer holding a known shape) unless
// frames are retained.
func (d *Decoder) newMetadata() *pulsarapi.MessageMetadata {
	if d.opts.Retain {
		return new(pulsarapi.MessageMetadata)
	}
	s := d.shapedMetadata()
	s.ok = false
	return s.m
}

// shapedMetadata returns the reused MessageMetadata and its shape.
func (d *Decoder) shapedMetadata() *shaped[*pulsarapi.MessageMetadata] {
	s := &d.fb.md
	if s.m == nil {
		s.m = new(pulsarapi.MessageMetadata)
	}
	return s
}

// newBrokerEntryMetadata returns the BrokerEntryMetadata to decode into:
// the reused one unless frames are retained.
func (d *Decoder) newBrokerEntryMetadata() *pulsarapi.BrokerEntryMetadata {
	if d.opts.Retain {
		return new(pulsarapi.BrokerEntryMetadata)
	}
	if d.fb.bem == nil {
		d.fb.bem = new(pulsarapi.BrokerEntryMetadata)
	}
	return d.fb.bem
}
