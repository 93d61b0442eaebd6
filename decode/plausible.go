package decode

import (
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/proto"
)

// Verdict is the outcome of a plausibility check of bytes that may start a frame.
type Verdict uint8

const (
	// Implausible: the bytes cannot start a well-formed frame.
	Implausible Verdict = iota
	// NeedMore: nothing is wrong so far; more bytes are needed to decide.
	NeedMore
	// Likely: a whole, well-formed frame starts here.
	Likely
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case NeedMore:
		return "need-more"
	case Likely:
		return "likely"
	}
	return "implausible"
}

// Plausible reports whether b starts with a whole, well-formed frame under
// the default limits. It is the check used to resynchronise a stream and
// to detect Pulsar traffic on unknown ports. See CheckFrame.
func Plausible(b []byte) bool {
	v, _ := CheckFrame(b, DefaultMaxFrameSize)
	return v == Likely
}

// CheckFrame judges whether b starts with a frame: 4 + totalSize within
// maxFrameSize (0 means DefaultMaxFrameSize), commandSize >= 4 and within
// totalSize - 4, a BaseCommand that parses with a known type whose
// sub-command (and no other) is set; a non-payload command must fill the
// frame; a payload command must carry 0x0e01 and a valid CRC32-C
// (optionally after 0x0e02 broker entry metadata), or an old-style
// metadata that fits and parses. With NeedMore, need is the number of
// bytes from b[0] required to go further. CheckFrame never panics and
// allocates only when the command is complete.
func CheckFrame(b []byte, maxFrameSize int) (v Verdict, need int) {
	v, need, _ = checkFrame(b, maxFrameSize)
	return v, need
}

// checkFrame is CheckFrame; strong is true when a NeedMore verdict comes
// after a valid payload command (only the payload is still to come).
func checkFrame(b []byte, maxFrameSize int) (v Verdict, need int, strong bool) {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	defer func() {
		if recover() != nil {
			v, need, strong = Implausible, 0, false
		}
	}()
	if len(b) >= 4 && int64(be32(b))+4 > int64(maxFrameSize) {
		return Implausible, 0, false
	}
	if len(b) < 8 {
		return NeedMore, 8, false
	}
	total, cs := be32(b), be32(b[4:])
	if total < 4+minCommandSize || cs < minCommandSize || cs > total-4 {
		return Implausible, 0, false
	}
	end := 8 + int(cs)
	if len(b) < end {
		return NeedMore, end, false
	}
	t, ok := rawCommandType(b[8:end])
	if !ok || !KnownCommandType(pulsarapi.BaseCommand_Type(t)) {
		return Implausible, 0, false
	}
	typ := pulsarapi.BaseCommand_Type(t)
	if !IsPayloadCommand(typ) && total != cs+4 {
		return Implausible, 0, false
	}
	if !plausibleCommand(b[8:end], typ) {
		return Implausible, 0, false
	}
	size := int(total) + 4
	if len(b) < size {
		return NeedMore, size, true
	}
	if IsPayloadCommand(typ) && !plausiblePayload(b[end:size]) {
		return Implausible, 0, false
	}
	return Likely, 0, false
}

// plausibleCommand checks that exactly the sub-command of the type is
// present and that the command parses.
func plausibleCommand(b []byte, typ pulsarapi.BaseCommand_Type) bool {
	if _, _, subs := rawCommand(b); !onlySub(subs, int32(typ)) {
		return false
	}
	var cmd pulsarapi.BaseCommand
	return (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(b, &cmd) == nil
}

// plausiblePayload checks the payload section of a SEND or MESSAGE frame.
func plausiblePayload(rest []byte) bool {
	p := 0
	if len(rest) >= 6 && be16(rest) == MagicBrokerEntryMetadata {
		n := be32(rest[2:])
		if int64(n) > int64(len(rest)-6) {
			return false
		}
		p = 6 + int(n)
		if len(rest)-p < 2 || be16(rest[p:]) != MagicChecksum {
			return false
		}
	}
	if len(rest)-p >= 2 && be16(rest[p:]) == MagicChecksum {
		if len(rest)-p < 10 || be32(rest[p+2:]) != CRC32C(rest[p+6:]) {
			return false
		}
		p += 6
		return int64(be32(rest[p:])) <= int64(len(rest)-p-4)
	}
	if len(rest) < 4 {
		return false
	}
	n := be32(rest)
	if int64(n) > int64(len(rest)-4) {
		return false
	}
	var md pulsarapi.MessageMetadata
	return (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(rest[4:4+n], &md) == nil
}
