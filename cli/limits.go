package cli

import (
	"github.com/spf13/pflag"
	"time"

	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// limitOptions are the resource limits shared by read, stats and capture
// (docs/cli.md "Limits"). Each limit, when hit, is reported: a gap whose
// bytes-lost problem names the limit, a close event "evicted", or a
// state-evicted conformance problem.
type limitOptions struct {
	reassemblyBuffer string // out-of-order bytes buffered per connection
	reassemblyMemory string // out-of-order bytes buffered in all
	maxConns         int
	maxPending       int
	maxRepeated      int
	keepAlive        time.Duration
}

func addLimitFlags(f *pflag.FlagSet, o *limitOptions) {
	f.StringVar(&o.reassemblyBuffer, "reassembly-buffer", "4MiB", "out-of-order TCP data buffered per connection; beyond it the missing bytes are given up (a gap with a bytes-lost problem naming the limit)")
	f.StringVar(&o.reassemblyMemory, "reassembly-memory", "64MiB", "out-of-order TCP data buffered over all connections (same effect as --reassembly-buffer)")
	f.IntVar(&o.maxConns, "max-conns", reassembly.DefaultMaxConns, "connection table size; beyond it the least recently active connections are closed with a close event \"evicted\"")
	f.IntVar(&o.maxPending, "max-pending", track.DefaultMaxPending, "requests and SENDs tracked in flight per connection; beyond it the oldest is dropped with a state-evicted problem")
	f.DurationVar(&o.keepAlive, "keepalive-timeout", track.DefaultKeepAlive, "a PING without PONG for this long is a ping-unanswered problem (the broker's default keep-alive: it closes the connection then)")
	f.IntVar(&o.maxRepeated, "max-repeated", 0, "elements of repeated fields (message ids, properties) decoded in one command or metadata; a message with more is not decoded, with a too-many-elements problem (0: as many as a frame up to --max-frame-size can hold, so every legal frame decodes; an element takes up to ~100 bytes of memory)")
}

// apply sets the limits on pc.
func (o *limitOptions) apply(pc *pipelineConfig) error {
	if o.reassemblyBuffer != "" {
		n, err := parseSize(o.reassemblyBuffer)
		if err != nil {
			return usageErr("--reassembly-buffer: %v", err)
		}
		pc.assemble.MaxBufferedBytesPerConn = n
	}
	if o.reassemblyMemory != "" {
		n, err := parseSize(o.reassemblyMemory)
		if err != nil {
			return usageErr("--reassembly-memory: %v", err)
		}
		pc.assemble.MaxBufferedBytesTotal = n
	}
	if o.maxConns < 0 || o.maxPending < 0 || o.maxRepeated < 0 {
		return usageErr("--max-conns, --max-pending and --max-repeated must be positive")
	}
	if o.keepAlive < 0 {
		return usageErr("--keepalive-timeout must be positive")
	}
	pc.keepAlive = o.keepAlive
	pc.decode.MaxRepeated = o.maxRepeated
	pc.assemble.MaxConns = o.maxConns
	pc.maxPending = o.maxPending
	return nil
}
