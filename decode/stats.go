package decode

import "fmt"

// StreamStats is the byte accounting of one stream (one direction of a
// connection), or a sum of them. Once a stream is closed,
// InFrames + Skipped + Truncated + Ignored == Seen; before that the
// difference is the bytes still buffered (Pending). Lost bytes (gaps) were
// never seen and are counted apart.
type StreamStats struct {
	Seen      int64 // bytes delivered by Data
	InFrames  int64 // bytes of frames emitted to the Sink
	Lost      int64 // bytes reported missing by Gap
	Skipped   int64 // bytes discarded while resynchronising
	Truncated int64 // bytes of a frame the stream ended inside of
	Ignored   int64 // bytes of TLS connections, not decoded
	Frames    int64 // frames emitted
	Gaps      int64 // Gap calls
}

// Pending returns the bytes seen but not yet accounted for (buffered).
func (s StreamStats) Pending() int64 {
	return s.Seen - s.InFrames - s.Skipped - s.Truncated - s.Ignored
}

// Balanced reports whether every seen byte is accounted for.
func (s StreamStats) Balanced() bool { return s.Pending() == 0 }

// Add returns the sum of s and o.
func (s StreamStats) Add(o StreamStats) StreamStats {
	return StreamStats{
		Seen: s.Seen + o.Seen, InFrames: s.InFrames + o.InFrames, Lost: s.Lost + o.Lost,
		Skipped: s.Skipped + o.Skipped, Truncated: s.Truncated + o.Truncated,
		Ignored: s.Ignored + o.Ignored, Frames: s.Frames + o.Frames, Gaps: s.Gaps + o.Gaps,
	}
}

// String renders the counters in the key=value form used in close events.
func (s StreamStats) String() string {
	return fmt.Sprintf("seen=%d in_frames=%d skipped=%d truncated=%d ignored=%d lost=%d frames=%d gaps=%d",
		s.Seen, s.InFrames, s.Skipped, s.Truncated, s.Ignored, s.Lost, s.Frames, s.Gaps)
}

// ConnStats is the accounting of both directions of a connection, indexed
// by reassembly.Dir.
type ConnStats [2]StreamStats
