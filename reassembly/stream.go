package reassembly

import (
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// maxDetectTries is how many payload segments of a connection whose
// handshake was not captured are offered to Options.Detect.
const maxDetectTries = 4

type streamState uint8

const (
	stateDetecting streamState = iota // waiting for a payload to run Detect on
	stateActive                       // accepted: Open was called
	stateIgnored                      // rejected by Detect
	stateClosed                       // ended; kept as a tomb while active before
)

// stream is one entry of the connection table: both directions of a
// connection. Its halves are indexed by g: 0 for the direction of the
// first packet seen (the key's), 1 for the other.
type stream struct {
	a     *Assembler
	key   connKey
	conn  Conn
	state streamState
	// firstIsClient is true when the first packet's sender is the client.
	firstIsClient bool
	tls           bool
	half          [2]half
	// buffered is the out-of-order data queued in both halves, in bytes
	// (with a per-segment overhead); isWaiting says the stream is in
	// Assembler.waiting.
	buffered  int64
	isWaiting bool
	// ending: end is delivering what was queued (a FIN reached then does
	// not end the connection a second time).
	ending bool

	// Detection state.
	first       [2]netip.AddrPort // src, dst of the first packet
	synDir      int8              // g of the SYN sender, -1 if none seen
	detectTries int

	prev, next *stream
	lastSeen   time.Time
}

// newStream makes the table entry for a segment of a connection not in
// the table, or returns nil when the segment opens none: a segment without
// payload that is not a SYN (a stray ACK, FIN or RST), or a connection on
// no Pulsar port while there is no Detect.
func (a *Assembler) newStream(netFlow gopacket.Flow, tcp *layers.TCP) *stream {
	if len(tcp.Payload) == 0 && a.missing == 0 && !tcp.SYN {
		a.stats.IgnoredSegments++
		return nil
	}
	srcRole, dstRole := a.roles[tcp.SrcPort], a.roles[tcp.DstPort]
	serverIsDst := true
	switch {
	case dstRole != roleNone && srcRole == roleNone:
	case srcRole != roleNone && dstRole == roleNone:
		serverIsDst = false
	case srcRole != roleNone && dstRole != roleNone:
		serverIsDst = !(tcp.SYN && tcp.ACK)
	default:
		if a.opts.Detect == nil {
			a.stats.IgnoredSegments++
			if tcp.SYN && !tcp.ACK {
				a.stats.IgnoredConns++
			}
			return nil
		}
	}
	s := &stream{a: a, synDir: -1, key: connKey{netFlow, tcp.SrcPort, tcp.DstPort}}
	s.first[0] = addrPort(netFlow.Src(), tcp.SrcPort)
	s.first[1] = addrPort(netFlow.Dst(), tcp.DstPort)
	s.conn.FirstSeen = a.ts
	s.conn.HandshakeSeen = tcp.SYN
	s.lastSeen = a.now
	a.stats.ActiveConns++
	a.lruPush(s)
	if srcRole == roleNone && dstRole == roleNone {
		return s // detecting
	}
	role := dstRole
	if !serverIsDst {
		role = srcRole
	}
	s.activate(serverIsDst, role == roleTLS)
	return s
}

func addrPort(e gopacket.Endpoint, port layers.TCPPort) netip.AddrPort {
	ip, _ := netip.AddrFromSlice(e.Raw())
	return netip.AddrPortFrom(ip.Unmap(), uint16(port))
}

// activate accepts the connection: firstIsClient says whether the first
// packet's sender is the client.
func (s *stream) activate(firstIsClient, tls bool) {
	a := s.a
	s.firstIsClient = firstIsClient
	s.tls = tls
	s.conn.TLS = tls
	if firstIsClient {
		s.conn.Client, s.conn.Server = s.first[0], s.first[1]
	} else {
		s.conn.Client, s.conn.Server = s.first[1], s.first[0]
	}
	a.nextID++
	s.conn.ID = a.nextID
	s.state = stateActive
	a.stats.Conns++
	if tls {
		a.stats.TLSConns++
	}
	a.h.Open(&s.conn)
}

// dir maps a half's index to its direction.
func (s *stream) dir(g int) Dir {
	if (g == 0) == s.firstIsClient {
		return ClientToServer
	}
	return ServerToClient
}

// accept handles one segment of the connection, sent in direction g.
func (s *stream) accept(g int, tcp *layers.TCP) {
	a := s.a
	a.lruTouch(s)
	switch s.state {
	case stateDetecting:
		if !s.detect(tcp, g) {
			a.stats.IgnoredSegments++
			return
		}
	case stateActive:
	default:
		a.stats.IgnoredSegments++
		return
	}
	a.stats.ConnSegments++
	h := &s.half[g]
	h.seen = true
	if tcp.SYN && !h.synSeen {
		h.synSeen, h.isn = true, tcp.Seq
		if !h.started {
			h.start(tcp.Seq + 1)
		}
	}
	if tcp.ACK {
		s.acked(g, tcp.Ack)
		if s.state != stateActive {
			return
		}
	}
	if tcp.RST {
		s.end(CloseRST, GapNotCaptured, a.ts)
		return
	}
	seq := tcp.Seq
	if tcp.SYN {
		seq++ // a SYN's data starts after it
	}
	s.data(g, seq, tcp.Payload, a.missing, tcp.FIN)
}

// newConnection reports whether a SYN sent in direction g of a connection
// in the table starts a new connection on the same 4-tuple (TCP port
// reuse): its initial sequence number differs from the SYN seen before in
// that direction, or that direction (or, for a SYN without ACK, either
// direction) already carried data. A retransmitted SYN is not new.
func (s *stream) newConnection(g int, tcp *layers.TCP) bool {
	h, o := &s.half[g], &s.half[1-g]
	if h.synSeen {
		return tcp.Seq != h.isn
	}
	if h.started && h.off > 0 {
		return true
	}
	if !tcp.ACK {
		// A SYN without ACK comes first on a connection: after data in
		// either direction, or after a SYN of the other side that it
		// does not answer, it is another connection.
		return (o.started && o.off > 0) || h.started
	}
	return false
}

// newAfterClose reports whether a segment sent in direction g to a
// closed connection's 4-tuple starts a new connection: a SYN that is not a
// retransmission of the old connection's, or payload far from the old
// connection's sequence space (a connection whose handshake the capture
// missed).
func (s *stream) newAfterClose(g int, tcp *layers.TCP) bool {
	h := &s.half[g]
	if tcp.SYN {
		return !h.synSeen || tcp.Seq != h.isn
	}
	if len(tcp.Payload) == 0 || !h.started {
		return false
	}
	far := int32(tcp.Seq - h.next)
	return far > tombWindow || far < -tombWindow
}

// tombWindow is how far from a closed connection's sequence space a
// segment may lie and still be taken as one of its own (a retransmission,
// or data sent before a RST): 16 MiB, beyond the largest receive windows
// in use.
const tombWindow = 16 << 20

// detect runs Options.Detect on a connection being detected; it reports
// whether the connection is (now) accepted.
func (s *stream) detect(tcp *layers.TCP, g int) bool {
	a := s.a
	if tcp.SYN {
		h := &s.half[g]
		if !h.synSeen {
			h.synSeen, h.isn = true, tcp.Seq
			h.start(tcp.Seq + 1)
		}
		if s.synDir < 0 {
			s.conn.HandshakeSeen = true
			if tcp.ACK {
				s.synDir = int8(1 - g) // the SYN-ACK sender is the server
			} else {
				s.synDir = int8(g)
			}
		}
	}
	if len(tcp.Payload) == 0 {
		return false
	}
	s.detectTries++
	if !a.opts.Detect(tcp.Payload) {
		if s.synDir >= 0 || s.detectTries >= maxDetectTries {
			s.state = stateIgnored
			a.stats.IgnoredConns++
		}
		return false
	}
	clientG := g
	if s.synDir >= 0 {
		clientG = int(s.synDir)
	}
	s.activate(clientG == 0, false)
	return true
}

// acked handles an acknowledgement number sent in direction g: it
// acknowledges the other direction's bytes before ack. It watches for a
// direction missing from the capture (Conn.Unseen) and declares the holes
// of the other direction that the receiver got past: their bytes were
// delivered, the capture missed them, and no copy of them will come.
func (s *stream) acked(g int, ack uint32) {
	h, o := &s.half[g], &s.half[1-g]
	if !h.hasAck {
		h.firstAck, h.hasAck = ack, true
	} else if !o.seen && !s.conn.unseen[s.dir(1-g)].Load() && int32(ack-h.firstAck) > 2 {
		// Moved on by more than a SYN and a FIN while not one segment of
		// the other direction was captured.
		s.conn.unseen[s.dir(1-g)].Store(true)
	}
	if !o.started || o.closed || s.state != stateActive {
		return
	}
	past := int32(ack - o.next)
	if past <= 0 || past > maxWindow {
		return
	}
	if !o.acked || int32(ack-o.ackedTo) > 0 {
		o.ackedTo, o.acked = ack, true
	}
	if o.waiting() || s.a.pendH != nil && !s.tls && s.a.pendH.Pending(&s.conn, s.dir(1-g)) {
		// Data (or a FIN) waits behind the hole, or the Handler holds a
		// frame that needs its bytes: declare it now. Otherwise the hole
		// holds nothing back; it is declared when data comes after it
		// (data), or at the end (end).
		s.giveUpTo(1-g, o.off+int64(past))
	}
}

// end ends the connection: what its halves still queue is delivered after
// gaps (for reason gr), Close is called with reason (CloseFIN instead of
// CloseEndOfCapture, CloseIdle or CloseEvicted when every direction seen
// had ended with a FIN), and the entry leaves the live table; a
// connection closed by FIN or RST stays in the table as a tomb, to
// recognise its late segments and a new connection on its 4-tuple.
func (s *stream) end(reason CloseReason, gr GapReason, ts time.Time) {
	a := s.a
	if s.state == stateClosed {
		return
	}
	a.lruRemove(s)
	a.stats.ActiveConns--
	if s.state != stateActive {
		s.state = stateClosed
		if a.conns[s.key] == s {
			delete(a.conns, s.key)
		}
		return
	}
	s.ending = true
	s.giveUpAll(gr, ts)
	s.lostTails(ts)
	if reason != CloseRST && reason != CloseReused && s.finished() {
		reason = CloseFIN
	}
	s.state = stateClosed
	a.buffered -= s.buffered
	s.buffered = 0
	s.half[0].ooo, s.half[1].ooo = nil, nil
	a.h.Close(&s.conn, reason, ts)
	switch reason {
	case CloseFIN, CloseRST:
		// Closed by its ends: kept to recognise its late segments.
		a.tombs = append(a.tombs, s)
		if a.opts.MaxConns > 0 && len(a.tombs) > 2*a.opts.MaxConns {
			a.forgetTombs(time.Time{})
		}
	default:
		// Forgotten by the reassembler, not closed: segments that come
		// later make a new connection, decoded from where they start.
		if a.conns[s.key] == s {
			delete(a.conns, s.key)
		}
	}
}

// lostTails reports, at the end of a connection, the bytes at the end of
// each direction that the peer acknowledged but the capture does not hold.
// The acknowledgement of a FIN the capture missed counts one sequence
// number more than the bytes: when no FIN of the direction was captured,
// the last acknowledged sequence number is taken for it.
func (s *stream) lostTails(ts time.Time) {
	for g := range s.half {
		h := &s.half[g]
		if !h.acked || h.closed || s.state != stateActive {
			continue
		}
		n := int64(int32(h.ackedTo - h.next))
		if !h.fin {
			n--
		}
		if n > 0 {
			s.giveUpTo(g, h.off+n)
		}
	}
}

// finished reports whether every direction seen ended with a FIN, and at
// least one did.
func (s *stream) finished() bool {
	h := &s.half
	return (h[0].fin || !h[0].seen) && (h[1].fin || !h[1].seen) && (h[0].fin || h[1].fin)
}
