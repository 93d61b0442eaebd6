package reassembly

import "time"

// Defaults of Options; a zero field means its default.
const (
	DefaultPort                    = 6650
	DefaultTLSPort                 = 6651
	DefaultMaxBufferedBytesPerConn = 4 << 20
	DefaultMaxBufferedBytesTotal   = 64 << 20
	DefaultIdleTimeout             = 2 * time.Minute
	DefaultGapTimeout              = 10 * time.Second
	DefaultMaxConns                = 100_000
)

// Options configure an Assembler. The zero value gives the defaults.
type Options struct {
	// Ports are the Pulsar (plain-text) server ports; default {6650}.
	Ports []uint16
	// TLSPorts are the Pulsar TLS server ports; default {6651}.
	// Connections on them are opened with Conn.TLS set and then only
	// counted: no Data or Gap is delivered for them.
	TLSPorts []uint16
	// Detect, when set, examines connections on other ports: the first
	// payload of a connection whose handshake was seen (up to 4 payload
	// segments of one whose handshake was not) must satisfy Detect for the
	// connection to be accepted. The SYN sender is the client when the
	// handshake was seen, else the sender of the accepted payload.
	// Connections that match neither a port nor Detect are ignored.
	Detect func(first []byte) bool

	// MaxBufferedBytesPerConn bounds the out-of-order data buffered per
	// connection (default 4 MiB; negative: unlimited). Reaching it skips the
	// missing bytes: reported as a Gap and counted in Stats.BufferLimitHits.
	MaxBufferedBytesPerConn int
	// MaxBufferedBytesTotal bounds all buffered data (default 64 MiB;
	// negative: unlimited); reaching it has the same effect as above.
	MaxBufferedBytesTotal int
	// IdleTimeout closes (CloseIdle) connections without packets for this
	// long in capture time (default 2 min; negative: never).
	IdleTimeout time.Duration
	// GapTimeout delivers out-of-order data that waited this long in
	// capture time for missing bytes, reporting a Gap (default 10 s;
	// negative: only the buffer limits, idle and end of input flush).
	GapTimeout time.Duration
	// MaxConns bounds the connection table (default 100000; negative:
	// unlimited). When a new connection makes it overflow, the least recently
	// active 1/64 of it (at least one connection) is closed (CloseEvicted).
	MaxConns int
}

func (o Options) withDefaults() Options {
	if o.Ports == nil {
		o.Ports = []uint16{DefaultPort}
	}
	if o.TLSPorts == nil {
		o.TLSPorts = []uint16{DefaultTLSPort}
	}
	if o.MaxBufferedBytesPerConn == 0 {
		o.MaxBufferedBytesPerConn = DefaultMaxBufferedBytesPerConn
	}
	if o.MaxBufferedBytesTotal == 0 {
		o.MaxBufferedBytesTotal = DefaultMaxBufferedBytesTotal
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.GapTimeout == 0 {
		o.GapTimeout = DefaultGapTimeout
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}
