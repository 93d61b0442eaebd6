package decode

import (
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// Problem is one defect found on a frame or a stream. Code is stable and
// documented in docs/problems.md; Detail says what exactly was seen.
type Problem struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// Checksum is the CRC32-C of a payload frame: what the frame says and what
// the bytes after the checksum field compute to.
type Checksum struct {
	Stored   uint32
	Computed uint32
}

// OK reports whether the stored and computed checksums agree.
func (c Checksum) OK() bool { return c.Stored == c.Computed }

// Entry is one message of a batch: its SingleMessageMetadata and payload.
type Entry struct {
	// Metadata is the decoded SingleMessageMetadata; nil with
	// Options.LazyEntryMetadata (use DecodeMetadata).
	Metadata *pulsarapi.SingleMessageMetadata
	// RawMetadata is the entry's SingleMessageMetadata as encoded. Like
	// Payload, it aliases decoder buffers unless Options.Retain.
	RawMetadata []byte
	// Payload is the entry's (uncompressed) payload bytes.
	Payload []byte
}

// Region is a named byte range of a frame, relative to the frame's first
// byte (the totalSize field), for hex dumps.
type Region struct {
	Name       string
	Start, End int
}

// Frame is one Pulsar frame, decoded and validated. It is the type every
// later stage (track, render, tui, diff) consumes.
type Frame struct {
	// N is the frame number, 1-based, in the order frames complete.
	N int
	// Time is the capture time of the packet that completed the frame.
	Time time.Time
	// Conn and Dir say where the frame travelled.
	Conn *reassembly.Conn
	Dir  reassembly.Dir
	// Offset is the byte offset of the frame's first byte in its stream
	// (direction of the connection), counting from the first byte seen.
	Offset int64
	// Size is the frame's length on the wire: 4 + TotalSize.
	Size int
	// Missing is how many of the frame's Size bytes were not captured: a
	// frame cut by a gap (problem bytes-lost) is named once the rest of it
	// that was captured has come, and its record holds the bytes before
	// the first gap; 0 for a whole frame. Size - Missing bytes are in the
	// stream's in_frames accounting.
	Missing     int
	TotalSize   uint32
	CommandSize uint32

	// Command is the decoded BaseCommand (nil when it could not be parsed).
	Command *pulsarapi.BaseCommand
	// Type is the command's type as written (also set when Command is nil
	// but the type could be read).
	Type pulsarapi.BaseCommand_Type

	// Payload commands (SEND, MESSAGE) only:
	BrokerEntryMetadata *pulsarapi.BrokerEntryMetadata
	// Checksum is nil when the frame has no 0x0e01 magic (old protocol).
	Checksum *Checksum
	Metadata *pulsarapi.MessageMetadata
	// Payload is the payload as carried (maybe compressed).
	Payload []byte
	// Uncompressed is the payload after decompression (equal to Payload
	// when not compressed; nil when decompression failed or the payload
	// is encrypted, Encrypted).
	Uncompressed []byte
	// Entries are the batch entries when the payload is a batch.
	Entries []Entry

	// Raw is the frame's bytes from the totalSize field on. It is only
	// kept when the decoder is asked to (hex dumps, payload display).
	Raw []byte
	// Regions mark the frame's parts within Raw.
	Regions []Region

	// Problems are the defects found on this frame; empty when none.
	Problems []Problem
}

// Encrypted reports whether the frame's payload is end-to-end encrypted
// (its metadata names encryption keys): ciphertext, not decompressed or
// split into batch entries.
func (f *Frame) Encrypted() bool { return f.Metadata != nil && IsEncrypted(f.Metadata) }

// EventKind names a stream event.
type EventKind string

// Stream events: everything that is not a frame but says what happened to
// the bytes of a stream.
const (
	EventOpen      EventKind = "open"      // connection first seen
	EventClose     EventKind = "close"     // connection ended (Detail says why)
	EventGap       EventKind = "gap"       // Bytes missing from the capture
	EventSkipped   EventKind = "skipped"   // Bytes skipped while resynchronising
	EventTruncated EventKind = "truncated" // stream ended inside a frame: Bytes left over
	EventTLS       EventKind = "tls"       // connection on a TLS port, not decodable
	// EventOutOfWindow: a segment of Bytes ignored, its sequence number far
	// outside any TCP window (not part of the stream, not in its accounting)
	EventOutOfWindow EventKind = "out-of-window"
	// EventConflict: a retransmission carried other bytes than the copy
	// captured first for Bytes at Offset; the first copy is the one
	// decoded (a retransmission-conflict problem, on the frame too when it
	// was still to come)
	EventConflict EventKind = "conflict"
)

// Event is a stream event. Events and frames are emitted in one ordered sequence.
type Event struct {
	Kind   EventKind
	Time   time.Time
	Conn   *reassembly.Conn
	Dir    reassembly.Dir
	Offset int64
	Bytes  int64
	Detail string
	// Problems carries the problem the event stands for (bytes-lost,
	// bytes-skipped, truncated-frame), if any.
	Problems []Problem
	// Stats is set on close events only: the byte accounting of both
	// directions of the connection, indexed by reassembly.Dir.
	Stats *ConnStats
}

// Sink receives decoded frames and stream events in order. The Frame and
// Event values may be reused after the call returns unless the decoder was
// told to retain them.
type Sink interface {
	Frame(f *Frame)
	Event(e *Event)
}
