package reassembly

import (
	"net/netip"
	"sync/atomic"
	"time"
)

// Dir is the direction of bytes on a connection.
type Dir uint8

const (
	// ClientToServer is the direction from the Pulsar client to the broker (or proxy).
	ClientToServer Dir = iota
	// ServerToClient is the direction from the broker to the client.
	ServerToClient
)

// String returns "c2s" or "s2c", the names used in every output.
func (d Dir) String() string {
	if d == ClientToServer {
		return "c2s"
	}
	return "s2c"
}

// Conn identifies one TCP connection. Roles are decided once, when the
// connection is first seen: the server is the side on a Pulsar port (or the
// side that content detection picked).
type Conn struct {
	// ID is the connection number, 1-based, in order of first appearance.
	ID int
	// Client and Server are the two endpoints.
	Client, Server netip.AddrPort
	// FirstSeen is the capture time of the connection's first packet.
	FirstSeen time.Time
	// TLS is true when the server port is a Pulsar TLS port (6651 by default):
	// such a connection is reported, not decoded.
	TLS bool
	// HandshakeSeen is true when the capture holds the connection's SYN.
	HandshakeSeen bool
	// unseen, by Dir: the capture holds no segment of that direction,
	// though the other direction's ACKs show it sent data (asymmetric
	// routing, a capture filter on one address). Set by the reassembler,
	// read by later stages: atomic.
	unseen [2]atomic.Bool
	// Payload is the reassembler's own count, by Dir, of the connection's
	// TCP payload bytes in sequence space: bytes given to the Handler as
	// Data plus bytes reported by Gap (for a TLS connection: the bytes
	// counted instead of delivered). It is final when Close is called, and
	// is what a decoder's byte accounting must add up to.
	Payload [2]int64
}

// Unseen reports whether direction d of the connection is missing from the
// capture: not one of its segments was captured, while the other
// direction acknowledged data from it. Rules that need both directions
// cannot be applied to such a connection.
func (c *Conn) Unseen(d Dir) bool { return c != nil && d <= 1 && c.unseen[d].Load() }

// CloseReason says why a connection's streams ended.
type CloseReason uint8

const (
	// CloseFIN means both sides (or the one seen) sent FIN.
	CloseFIN CloseReason = iota + 1
	// CloseRST means a side sent RST.
	CloseRST
	// CloseIdle means the connection was idle past the flush timeout.
	CloseIdle
	// CloseEndOfCapture means the input ended with the connection open.
	CloseEndOfCapture
	// CloseEvicted means the connection table or buffer limit forced it out.
	CloseEvicted
	// CloseReused means a new connection started on the same addresses and
	// ports (a SYN with a new initial sequence number) while this one was
	// open: TCP port reuse.
	CloseReused
)

// String names the reason as it appears in outputs.
func (r CloseReason) String() string {
	switch r {
	case CloseFIN:
		return "fin"
	case CloseRST:
		return "rst"
	case CloseIdle:
		return "idle"
	case CloseEndOfCapture:
		return "end-of-capture"
	case CloseEvicted:
		return "evicted"
	case CloseReused:
		return "reused"
	}
	return "unknown"
}

// Handler receives the reassembled, ordered bytes of every connection. The
// reassembler calls it from one goroutine, in capture order.
type Handler interface {
	// Open is called once per connection, before any other call for it.
	Open(c *Conn)
	// Data delivers the next in-order bytes of one direction. data is only
	// valid during the call. ts is the capture time of the packet that
	// completed these bytes.
	Data(c *Conn, d Dir, data []byte, ts time.Time)
	// Gap reports that n bytes of one direction are missing from the capture
	// (never captured, or given up on); the next Data continues after them.
	Gap(c *Conn, d Dir, n int64, ts time.Time)
	// Close is called once per connection after its last Data or Gap.
	Close(c *Conn, reason CloseReason, ts time.Time)
}

// GapReason says why the bytes of a Gap are missing.
type GapReason uint8

const (
	// GapNotCaptured: the bytes never reached the capture (as far as the
	// reassembler can tell: it waited until the end of the input, or
	// the connection was closed).
	GapNotCaptured GapReason = iota
	// GapSnaplen: the bytes were cut by the capture's snap length.
	GapSnaplen
	// GapBufferLimit: the reassembler gave up waiting for the bytes
	// because the out-of-order data behind them reached
	// Options.MaxBufferedBytesPerConn or MaxBufferedBytesTotal.
	GapBufferLimit
	// GapTimeout: the reassembler gave up waiting for the bytes after
	// Options.GapTimeout (or IdleTimeout) of capture time.
	GapTimeout
	// GapAcked: the receiver acknowledged bytes beyond them, so they were
	// delivered and the capture missed them: declared at once.
	GapAcked
)

// String explains the reason as it appears in problem details.
func (r GapReason) String() string {
	switch r {
	case GapSnaplen:
		return "cut by the snap length"
	case GapBufferLimit:
		return "given up: reassembly buffer limit reached"
	case GapTimeout:
		return "given up: waited longer than the gap timeout"
	case GapAcked:
		return "not captured, though the receiver acknowledged them"
	}
	return "not captured"
}

// OutOfWindowHandler is an optional interface of a Handler that wants to
// know of segments the reassembler ignored because their sequence number
// lies far outside any TCP window (more than 2^30 bytes before or after
// the next expected byte: a forged or corrupted segment, never data of the
// stream); n is the segment's payload length. Without it they are only
// counted (Stats.OutOfWindow).
type OutOfWindowHandler interface {
	OutOfWindow(c *Conn, d Dir, n int, ts time.Time)
}

// GapReasonHandler is an optional interface of a Handler that wants to
// know why bytes are missing: the reassembler then calls GapWithReason
// instead of Gap.
type GapReasonHandler interface {
	GapWithReason(c *Conn, d Dir, n int64, reason GapReason, ts time.Time)
}

// ConflictHandler is an optional interface of a Handler that wants to know
// of retransmissions that carried other bytes than the copy captured
// first: n bytes at stream offset off of direction d. The copy captured
// first is the one delivered (as the receiver kept it). It is called when
// the second copy is captured: before the bytes are delivered when the
// first copy was still queued, after them when it was delivered. Without
// it they are only counted (Stats.Conflicts).
type ConflictHandler interface {
	Conflict(c *Conn, d Dir, off, n int64, ts time.Time)
}

// PendingHandler is an optional interface of a Handler that holds the
// start of a unit (a frame) of direction d still waiting for bytes. When
// the peer acknowledges bytes beyond the next one, while nothing captured
// waits behind them, the reassembler asks it: if it holds such a start,
// the missing bytes are declared lost at once (GapAcked), so that the
// unit is reported in capture order; otherwise they are declared when
// data comes after them, or at the end.
type PendingHandler interface {
	Pending(c *Conn, d Dir) bool
}
