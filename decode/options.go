package decode

// Size limits used when Options leaves them zero.
const (
	// DefaultMaxMessageSize is the broker's default maxMessageSize (5 MiB).
	DefaultMaxMessageSize = 5 * 1024 * 1024
	// FramePadding is the slack the broker adds to maxMessageSize for the
	// command and metadata (Commands.MESSAGE_SIZE_FRAME_PADDING, 10 KiB).
	FramePadding = 10 * 1024
	// DefaultMaxFrameSize is the largest frame accepted by default, counted
	// on the wire (4 + totalSize), exactly like the broker's
	// LengthFieldBasedFrameDecoder(maxMessageSize + MESSAGE_SIZE_FRAME_PADDING).
	DefaultMaxFrameSize = DefaultMaxMessageSize + FramePadding
	// DefaultMaxDecompressed bounds the output of decompressing one payload.
	DefaultMaxDecompressed = 5 * 1024 * 1024
)

// Options configure the frame and stream decoders. The zero value is valid.
type Options struct {
	// MaxFrameSize is the largest frame accepted, counted as it is on the
	// wire: 4 + totalSize. Larger claims are reported as frame-too-large and
	// the stream is resynchronised. 0 means DefaultMaxFrameSize.
	MaxFrameSize int
	// MaxDecompressed bounds the bytes one payload may decompress to
	// (decompression-limit beyond it). 0 means DefaultMaxDecompressed.
	MaxDecompressed int
	// KeepRaw sets Frame.Raw to the frame's bytes (for hex dumps). Without
	// Retain, Raw is only valid during the Sink call, like the rest of the frame.
	KeepRaw bool
	// Retain makes every Frame and Event handed to the Sink a fresh value
	// that the Sink may keep: no slice of it aliases decoder buffers or the
	// bytes passed to Data. Without Retain the decoder reuses Frame, Event,
	// Command, Metadata, BrokerEntryMetadata, Entries and buffers after the
	// Sink call returns.
	Retain bool
	// LazyEntryMetadata leaves Entry.Metadata nil: each batch entry's
	// SingleMessageMetadata is validated on the wire (same problems as
	// when decoded) but only decoded on demand, by Entry.DecodeMetadata.
	// For consumers that do not look at entry metadata (read -q); much
	// faster on batches of many small messages.
	LazyEntryMetadata bool
	// SkipPayloadContents leaves payloads as they are on the wire: no
	// decompression, no batch splitting (Frame.Uncompressed and Entries
	// stay nil), so the problems only those find (decompression-failed,
	// decompression-limit, uncompressed-size-mismatch, batch-malformed,
	// batch-count-mismatch) are not looked for. The checksum, the
	// metadata and everything before it are checked as usual. For
	// consumers that only count (stats).
	SkipPayloadContents bool
	// MaxRepeated bounds the elements of the repeated fields of one
	// message (a command, a message metadata, a batch entry's metadata),
	// counted at every level; a message with more elements is not decoded
	// (too-many-elements). 0 means the larger of MaxFrameSize and
	// MaxDecompressed: every element takes at least a byte on the wire, so
	// no message a legal frame (or payload) can hold has more, and every
	// legal frame decodes. An element takes a few bytes on the wire but
	// up to about a hundred once decoded (a message id), so a message of
	// N bytes may take up to 50 N of memory while it is decoded; a lower
	// limit trades legal frames for memory.
	MaxRepeated int
}

func (o Options) withDefaults() Options {
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	if o.MaxDecompressed <= 0 {
		o.MaxDecompressed = DefaultMaxDecompressed
	}
	if o.MaxRepeated <= 0 {
		o.MaxRepeated = max(o.MaxFrameSize, o.MaxDecompressed)
	}
	return o
}
