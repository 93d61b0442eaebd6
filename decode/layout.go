package decode

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/encoding/protowire"
)

// Wire constants of the Pulsar frame layout.
const (
	// MagicChecksum (0x0e01) precedes the CRC32-C of a payload frame.
	MagicChecksum = 0x0e01
	// MagicBrokerEntryMetadata (0x0e02) precedes broker entry metadata.
	MagicBrokerEntryMetadata = 0x0e02
	// minCommandSize is the smallest BaseCommand that can be valid: the
	// type field (2 bytes) and an empty sub-command (at least 2 bytes).
	minCommandSize = 4
)

// crcTable is the CRC32-C (Castagnoli) table of payload checksums.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC32-C of b, as Pulsar computes payload checksums.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

// Region names, as they appear in Frame.Regions.
const (
	RegionTotalSize           = "total-size"
	RegionCommandSize         = "command-size"
	RegionCommand             = "command"
	RegionBrokerEntryMetadata = "broker-entry-metadata"
	RegionMagic               = "magic"
	RegionChecksum            = "checksum"
	RegionMetadataSize        = "metadata-size"
	RegionMetadata            = "metadata"
	RegionPayload             = "payload"
)

// IsPayloadCommand reports whether frames of type t carry a message
// payload after the command (SEND and MESSAGE).
func IsPayloadCommand(t pulsarapi.BaseCommand_Type) bool {
	return t == pulsarapi.BaseCommand_SEND || t == pulsarapi.BaseCommand_MESSAGE
}

// KnownCommandType reports whether t is a command type of the schema.
func KnownCommandType(t pulsarapi.BaseCommand_Type) bool {
	if t >= 0 && int(t) < len(knownTypes) {
		return knownTypes[t]
	}
	_, ok := pulsarapi.BaseCommand_Type_name[int32(t)]
	return ok
}

// schemaNewest is the newest protocol version of the schema and its
// highest command type: a command type beyond it is newer than the schema.
func schemaNewest() (version int32, maxType int32) {
	for v := range pulsarapi.ProtocolVersion_name {
		version = max(version, v)
	}
	for t := range pulsarapi.BaseCommand_Type_name {
		maxType = max(maxType, t)
	}
	return version, maxType
}

// unknownTypeDetail explains a command type the schema does not have.
func unknownTypeDetail(t int32) string {
	v, top := schemaNewest()
	if t > top {
		return fmt.Sprintf("command type %d: newer than protocol v%d, the schema's newest (its types end at %d); the frame is framed and accounted, its command not decoded", t, v, top)
	}
	return fmt.Sprintf("command type %d is not in the schema (protocol v%d)", t, v)
}

// knownTypes says which of the first 128 command types the schema has
// (KnownCommandType without a map lookup).
var knownTypes = func() (k [128]bool) {
	for t := range pulsarapi.BaseCommand_Type_name {
		if t >= 0 && int(t) < len(k) {
			k[t] = true
		}
	}
	return k
}()

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// rawCommand reads the type field (1) of an encoded BaseCommand without
// decoding it, so that unknown types can still be reported (the last
// occurrence wins, as in protobuf), and notes which length-delimited
// fields numbered below 128 are present (the sub-commands).
func rawCommand(b []byte) (t int32, ok bool, subs [2]uint64) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return t, ok, subs
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return t, ok, subs
			}
			t, ok = int32(v), true
			b = b[m:]
			continue
		}
		if typ == protowire.BytesType && num > 1 && num < 128 {
			subs[num/64] |= 1 << (num % 64)
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return t, ok, subs
		}
		b = b[m:]
	}
	return t, ok, subs
}

// rawCommandType is the type part of rawCommand.
func rawCommandType(b []byte) (int32, bool) {
	t, ok, _ := rawCommand(b)
	return t, ok
}

// onlySub reports whether subs holds exactly field t.
func onlySub(subs [2]uint64, t int32) bool {
	if t <= 1 || t >= 128 {
		return false
	}
	want := [2]uint64{}
	want[t/64] = 1 << (t % 64)
	return subs == want
}

// unknownNumbers appends the field numbers found in an unknown-fields blob.
func unknownNumbers(dst []protowire.Number, b []byte) []protowire.Number {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return dst
		}
		_ = typ
		dst = append(dst, num)
		b = b[n:]
	}
	return dst
}
