// Package broker is a scripted stand-in for an Apache Pulsar broker. It speaks
// enough of the binary protocol for the real Go client to run its ordinary
// flows (lookups, producers, consumers of every subscription type, acks,
// redelivery, chunking, errors and broker-initiated closes) and logs every
// frame it reads and writes, so that captures taken of its traffic come with
// exact expectations. It listens on loopback addresses only.
package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Magic numbers that introduce the optional sections of a payload frame.
const (
	MagicCrc32c              = 0x0e01
	MagicBrokerEntryMetadata = 0x0e02
)

// MaxFrameSize bounds the frames the broker accepts (5 MiB of message plus
// room for the command and headers).
const MaxFrameSize = 5*1024*1024 + 10*1024

// Frame is one Pulsar frame: a BaseCommand and, for SEND and MESSAGE, the
// payload section.
type Frame struct {
	// Cmd is the command.
	Cmd *pulsarapi.BaseCommand
	// HasPayload tells whether the frame carries a payload section.
	HasPayload bool
	// BrokerEntryMetadata is the raw 0x0e02 section (without magic and size),
	// nil when absent.
	BrokerEntryMetadata []byte
	// HasChecksum tells whether the payload had the 0x0e01 checksum.
	HasChecksum bool
	// Checksum is the CRC32-C of Body, as found in or written to the frame.
	Checksum uint32
	// Body is metadataSize, MessageMetadata and payload: what the checksum covers.
	Body []byte
}

// Metadata parses the MessageMetadata at the start of Body.
func (f *Frame) Metadata() (*pulsarapi.MessageMetadata, error) {
	if len(f.Body) < 4 {
		return nil, errors.New("payload section shorter than the metadata size")
	}
	n := binary.BigEndian.Uint32(f.Body)
	if uint64(n) > uint64(len(f.Body)-4) {
		return nil, fmt.Errorf("metadata size %d exceeds the %d bytes left", n, len(f.Body)-4)
	}
	md := &pulsarapi.MessageMetadata{}
	if err := proto.Unmarshal(f.Body[4:4+n], md); err != nil {
		return nil, fmt.Errorf("parse message metadata: %w", err)
	}
	return md, nil
}

// ChecksumValid reports whether Checksum matches Body (true when the frame has
// no checksum).
func (f *Frame) ChecksumValid() bool {
	return !f.HasChecksum || Checksum(f.Body) == f.Checksum
}

// ReadFrame reads one frame from r.
func ReadFrame(r *bufio.Reader) (*Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read frame size: %w", err)
	}
	total := binary.BigEndian.Uint32(hdr[:])
	if total < 4 || total > MaxFrameSize {
		return nil, fmt.Errorf("frame size %d out of range", total)
	}
	buf := make([]byte, total)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read frame of %d bytes: %w", total, err)
	}
	return ParseFrame(buf)
}

// ParseFrame parses a frame without its leading 4-byte total size.
func ParseFrame(buf []byte) (*Frame, error) {
	if len(buf) < 4 {
		return nil, errors.New("frame shorter than the command size")
	}
	cmdSize := binary.BigEndian.Uint32(buf)
	if uint64(cmdSize) > uint64(len(buf)-4) {
		return nil, fmt.Errorf("command size %d exceeds the frame", cmdSize)
	}
	f := &Frame{Cmd: &pulsarapi.BaseCommand{}}
	if err := proto.Unmarshal(buf[4:4+cmdSize], f.Cmd); err != nil {
		return nil, fmt.Errorf("parse BaseCommand: %w", err)
	}
	rest := buf[4+cmdSize:]
	if len(rest) == 0 {
		return f, nil
	}
	f.HasPayload = true
	if len(rest) >= 2 && binary.BigEndian.Uint16(rest) == MagicBrokerEntryMetadata {
		if len(rest) < 6 {
			return nil, errors.New("truncated broker entry metadata header")
		}
		n := binary.BigEndian.Uint32(rest[2:])
		if uint64(n) > uint64(len(rest)-6) {
			return nil, fmt.Errorf("broker entry metadata size %d exceeds the frame", n)
		}
		f.BrokerEntryMetadata = rest[6 : 6+n]
		rest = rest[6+n:]
	}
	if len(rest) >= 2 && binary.BigEndian.Uint16(rest) == MagicCrc32c {
		if len(rest) < 6 {
			return nil, errors.New("truncated checksum")
		}
		f.HasChecksum = true
		f.Checksum = binary.BigEndian.Uint32(rest[2:])
		rest = rest[6:]
	}
	f.Body = rest
	return f, nil
}

// AppendFrame appends the wire encoding of f to dst.
func AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	cmd, err := proto.Marshal(f.Cmd)
	if err != nil {
		return dst, fmt.Errorf("marshal %s: %w", f.Cmd.GetType(), err)
	}
	total := 4 + len(cmd)
	if f.HasPayload {
		if f.BrokerEntryMetadata != nil {
			total += 6 + len(f.BrokerEntryMetadata)
		}
		if f.HasChecksum {
			total += 6
		}
		total += len(f.Body)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(cmd)))
	dst = append(dst, cmd...)
	if !f.HasPayload {
		return dst, nil
	}
	if f.BrokerEntryMetadata != nil {
		dst = binary.BigEndian.AppendUint16(dst, MagicBrokerEntryMetadata)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(f.BrokerEntryMetadata)))
		dst = append(dst, f.BrokerEntryMetadata...)
	}
	if f.HasChecksum {
		dst = binary.BigEndian.AppendUint16(dst, MagicCrc32c)
		dst = binary.BigEndian.AppendUint32(dst, f.Checksum)
	}
	return append(dst, f.Body...), nil
}

// NewBody builds a payload section body (metadataSize, metadata, payload).
func NewBody(md *pulsarapi.MessageMetadata, payload []byte) ([]byte, error) {
	m, err := proto.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("marshal message metadata: %w", err)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(m)))
	b = append(b, m...)
	return append(b, payload...), nil
}

// Checksum computes the CRC32-C the protocol uses over a payload body.
func Checksum(body []byte) uint32 { return crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) }

// cmd builds a BaseCommand of type t with one field set by set.
func cmd(t pulsarapi.BaseCommand_Type, set func(*pulsarapi.BaseCommand)) *pulsarapi.BaseCommand {
	c := &pulsarapi.BaseCommand{Type: t.Enum()}
	if set != nil {
		set(c)
	}
	return c
}
