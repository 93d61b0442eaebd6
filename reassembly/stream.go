package reassembly

import (
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	gpr "github.com/gopacket/gopacket/reassembly"
)

// maxDetectTries is how many payload segments of a connection whose
// handshake was not captured are offered to Options.Detect.
const maxDetectTries = 4

type streamState uint8

const (
	stateDetecting streamState = iota // waiting for a payload to run Detect on
	stateActive                       // accepted: Open was called
	stateIgnored                      // rejected by Detect
	stateClosed                       // Close was called
)

// stream is one entry of the connection table; it implements gopacket's
// reassembly.Stream for both directions of the connection.
type stream struct {
	a     *Assembler
	conn  Conn
	state streamState
	// firstIsClient is true when gopacket's TCPDirClientToServer (the
	// direction of the first packet seen) is our ClientToServer.
	firstIsClient bool
	tls           bool
	fin           [2]bool // by Dir
	seen          [2]bool // by Dir
	// firstAck is the acknowledgement number of each direction's first
	// segment with ACK set (hasAck); later ones beyond it by more than the
	// SYN and FIN show that the other direction sent data.
	firstAck [2]uint32
	hasAck   [2]bool
	// queued, by Dir: where the segments that came ahead of the next
	// expected byte start in the stream, and when they were captured, so
	// that their bytes are delivered at their own packets' times when they
	// are delivered late (after a hole is filled or given up). Bounded by
	// maxQueuedTimes; in stream order.
	queued [2][]queuedSeg
	rst    bool
	// off is the stream offset (bytes delivered plus gaps) by Dir; holes
	// are ranges of stream offsets not captured (snaplen), in order.
	off   [2]int64
	holes [2][]hole

	// Detection state.
	first       [2]netip.AddrPort // src, dst of the first packet
	synDir      int8              // gopacket dir of the SYN sender, -1 if none seen
	detectTries int

	prev, next *stream
	lastSeen   time.Time
}

// hole is a range [start, end) of stream offsets whose bytes were not
// captured.
type hole struct{ start, end int64 }

type factory Assembler

// New implements gopacket's reassembly.StreamFactory. Segments without
// payload that do not open a connection (a stray ACK, FIN or RST) create
// no connection.
func (f *factory) New(netFlow, tcpFlow gopacket.Flow, tcp *layers.TCP, _ gpr.AssemblerContext) gpr.Stream {
	a := (*Assembler)(f)
	if len(tcp.Payload) == 0 && !tcp.SYN {
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
	s := &stream{a: a, synDir: -1}
	s.first[0] = addrPort(netFlow.Src(), tcp.SrcPort)
	s.first[1] = addrPort(netFlow.Dst(), tcp.DstPort)
	s.conn.FirstSeen = a.ts
	s.conn.HandshakeSeen = tcp.SYN
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

// dir maps gopacket's direction to ours.
func (s *stream) dir(d gpr.TCPFlowDirection) Dir {
	if (d == gpr.TCPDirClientToServer) == s.firstIsClient {
		return ClientToServer
	}
	return ServerToClient
}

func gdir(d gpr.TCPFlowDirection) int8 {
	if d == gpr.TCPDirClientToServer {
		return 0
	}
	return 1
}

// Accept implements gopacket's reassembly.Stream: it is called for every
// segment of the connection.
func (s *stream) Accept(tcp *layers.TCP, _ gopacket.CaptureInfo, dir gpr.TCPFlowDirection, nextSeq gpr.Sequence, start *bool, _ gpr.AssemblerContext) bool {
	a := s.a
	a.lruTouch(s)
	switch s.state {
	case stateDetecting:
		if !s.detect(tcp, dir) {
			a.stats.IgnoredSegments++
			return false
		}
	case stateActive:
	default:
		a.stats.IgnoredSegments++
		return false
	}
	a.stats.ConnSegments++
	d := s.dir(dir)
	s.seen[d] = true
	if tcp.ACK {
		s.noteAck(d, tcp.Ack)
	}
	if tcp.FIN {
		s.fin[d] = true
	}
	if a.missing > 0 {
		s.addHole(d, tcp, nextSeq)
	}
	if nextSeq < 0 { // gopacket's invalidSequence: no start yet
		if !tcp.SYN {
			// Handshake not captured: start where the capture starts.
			*start = true
		}
		return true
	}
	if n := len(tcp.Payload); n > 0 {
		if far := int32(tcp.Seq - uint32(nextSeq)); far > maxWindow || far < -maxWindow {
			a.stats.OutOfWindow++
			if h, ok := a.h.(OutOfWindowHandler); ok {
				h.OutOfWindow(&s.conn, d, n, a.ts)
			}
			return false
		}
		seq := gpr.Sequence(tcp.Seq)
		switch diff := nextSeq.Difference(seq); {
		case diff > 0:
			a.stats.OutOfOrder++
			s.noteQueued(d, s.off[d]+int64(diff), s.off[d]+int64(diff)+int64(n), a.ts)
		case diff < 0 && nextSeq.Difference(seq.Add(n)) <= 0:
			a.stats.Retransmissions++
		case diff < 0:
			a.stats.Overlaps++
		}
	}
	return true
}

// maxWindow is the largest TCP window (2^30 bytes, with window scaling):
// a segment farther than that from the next expected byte is no part of the
// stream.
const maxWindow = 1 << 30

// noteAck watches direction d's acknowledgements: when they have moved on
// by more than a SYN and a FIN while not one segment of the other
// direction was captured, the other direction is missing from the capture
// (Conn.Unseen).
func (s *stream) noteAck(d Dir, ack uint32) {
	if !s.hasAck[d] {
		s.firstAck[d], s.hasAck[d] = ack, true
		return
	}
	o := 1 - d
	if s.seen[o] || s.conn.unseen[o].Load() {
		return
	}
	if moved := int32(ack - s.firstAck[d]); moved > 2 {
		s.conn.unseen[o].Store(true)
	}
}

// addHole records where the uncaptured tail of the current segment lies
// in the stream of direction d. nextSeq is gopacket's next expected
// sequence number, which corresponds to stream offset s.off[d].
func (s *stream) addHole(d Dir, tcp *layers.TCP, nextSeq gpr.Sequence) {
	captured := len(tcp.Payload) - s.a.missing
	var rel int64 // segment start relative to s.off[d]
	if nextSeq >= 0 {
		rel = int64(nextSeq.Difference(gpr.Sequence(tcp.Seq)))
	}
	h := hole{start: s.off[d] + rel + int64(captured)}
	h.end = h.start + int64(s.a.missing)
	if h.start < s.off[d] {
		h.start = s.off[d]
	}
	if h.end <= h.start {
		return
	}
	hs := s.holes[d]
	i := len(hs)
	for i > 0 && hs[i-1].start > h.start {
		i--
	}
	hs = append(hs, hole{})
	copy(hs[i+1:], hs[i:])
	hs[i] = h
	s.holes[d] = hs
}

// deliver hands n bytes of direction d, at stream offset s.off[d], to the
// Handler: as Data, except for the parts in holes, reported as Gaps.
func (s *stream) deliver(d Dir, data []byte, ts time.Time) {
	a := s.a
	for len(data) > 0 {
		hs := s.holes[d]
		for len(hs) > 0 && hs[0].end <= s.off[d] {
			hs = hs[1:]
		}
		s.holes[d] = hs
		n := int64(len(data))
		if len(hs) == 0 || hs[0].start >= s.off[d]+n {
			a.stats.BytesDelivered += n
			a.h.Data(&s.conn, d, data, ts)
			s.off[d] += n
			return
		}
		if h := hs[0]; h.start > s.off[d] {
			k := h.start - s.off[d]
			a.stats.BytesDelivered += k
			a.h.Data(&s.conn, d, data[:k], ts)
			data = data[k:]
			s.off[d] += k
		} else {
			k := min(h.end-s.off[d], int64(len(data)))
			a.stats.Gaps++
			a.stats.LostBytes += k
			a.stats.SnaplenBytes += k
			a.gap(&s.conn, d, k, GapSnaplen, ts)
			data = data[k:]
			s.off[d] += k
		}
	}
}

// detect runs Options.Detect on a connection being detected; it reports
// whether the connection is (now) accepted.
func (s *stream) detect(tcp *layers.TCP, dir gpr.TCPFlowDirection) bool {
	a := s.a
	if tcp.SYN {
		if s.synDir < 0 {
			s.conn.HandshakeSeen = true
			if tcp.ACK {
				s.synDir = 1 - gdir(dir) // the SYN-ACK sender is the server
			} else {
				s.synDir = gdir(dir)
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
	clientDir := gdir(dir)
	if s.synDir >= 0 {
		clientDir = s.synDir
	}
	s.activate(clientDir == 0, false)
	return true
}

// ReassembledSG implements gopacket's reassembly.Stream.
func (s *stream) ReassembledSG(sg gpr.ScatterGather, _ gpr.AssemblerContext) {
	if s.state != stateActive {
		return
	}
	a := s.a
	gd, _, end, skip := sg.Info()
	d := s.dir(gd)
	ts := a.ts
	if a.flushing != 0 {
		ts = a.now
	}
	if skip > 0 {
		s.conn.Payload[d] += int64(skip)
		a.stats.Gaps++
		a.stats.LostBytes += int64(skip)
		reason := GapNotCaptured
		switch a.flushing {
		case 0:
			a.stats.BufferLimitHits++
			reason = GapBufferLimit
		case CloseIdle:
			reason = GapTimeout
		}
		if !s.tls {
			a.gap(&s.conn, d, int64(skip), reason, ts)
		}
		s.off[d] += int64(skip)
	}
	if n, _ := sg.Lengths(); n > 0 {
		s.conn.Payload[d] += int64(n)
		data := sg.Fetch(n)
		if s.tls {
			a.stats.TLSBytes += int64(n)
			s.off[d] += int64(n)
		}
		// Bytes of segments that came ahead of a hole given up (a gap, or
		// a flush): each at its own packet's capture time, as if the hole
		// had been declared when they came. A hole filled by the current
		// packet (a retransmission) makes everything after it available
		// now: ts.
		late := skip > 0 || a.flushing != 0
		for !s.tls && len(data) > 0 {
			q := s.queued[d]
			for len(q) > 0 && q[0].end <= s.off[d] {
				q = q[1:]
			}
			s.queued[d] = q
			k, t := int64(len(data)), ts
			if len(q) > 0 {
				if q[0].off <= s.off[d] {
					k = min(k, q[0].end-s.off[d])
					if late {
						t = q[0].ts
					}
				} else {
					k = min(k, q[0].off-s.off[d])
				}
			}
			s.deliverPart(d, data[:k], t)
			data = data[k:]
		}
	}
	if end && a.flushing == 0 && a.cur != nil && a.cur.RST {
		// gopacket ends only the RST's direction; the connection is over.
		s.rst = true
		s.close(CloseRST, ts)
	}
}

// queuedSeg is where a segment that came ahead of the next expected byte
// starts in its stream, and its capture time.
type queuedSeg struct {
	off, end int64
	ts       time.Time
}

// maxQueuedTimes bounds the queued segments whose times a direction keeps
// (beyond it, the latest are not kept: their bytes take the time of the
// packet before them).
const maxQueuedTimes = 4096

// noteQueued records that a segment holding stream offsets [off, end), ahead
// of the next expected byte, was captured at ts.
func (s *stream) noteQueued(d Dir, off, end int64, ts time.Time) {
	q := s.queued[d]
	if len(q) >= maxQueuedTimes {
		return
	}
	i := len(q)
	for i > 0 && q[i-1].off > off {
		i--
	}
	if i > 0 && q[i-1].off == off { // a retransmission of a queued segment
		return
	}
	q = append(q, queuedSeg{})
	copy(q[i+1:], q[i:])
	q[i] = queuedSeg{off, end, ts}
	s.queued[d] = q
}

// deliverPart hands bytes of direction d to the Handler, as Data, or
// through deliver when holes (snap length) lie ahead.
func (s *stream) deliverPart(d Dir, data []byte, ts time.Time) {
	if len(s.holes[d]) == 0 {
		s.a.stats.BytesDelivered += int64(len(data))
		s.a.h.Data(&s.conn, d, data, ts)
		s.off[d] += int64(len(data))
		return
	}
	s.deliver(d, data, ts)
}

// ReassemblyComplete implements gopacket's reassembly.Stream: both
// directions are over. The entry leaves the table.
func (s *stream) ReassemblyComplete(_ gpr.AssemblerContext) bool {
	a := s.a
	a.lruRemove(s)
	a.stats.ActiveConns--
	if s.state == stateActive {
		reason := a.flushing
		if a.cur != nil && a.cur.RST {
			reason = CloseRST
		}
		finished := (s.fin[0] || !s.seen[0]) && (s.fin[1] || !s.seen[1]) && (s.fin[0] || s.fin[1])
		if reason != CloseRST && (finished || reason == 0) {
			reason = CloseFIN
		}
		ts := a.now
		if a.flushing == 0 {
			ts = a.ts
		}
		switch reason {
		case CloseEvicted:
			a.stats.Evictions++
		case CloseIdle:
			a.stats.IdleCloses++
		}
		s.close(reason, ts)
	}
	s.state = stateClosed
	return true
}

func (s *stream) close(reason CloseReason, ts time.Time) {
	s.state = stateClosed
	s.a.h.Close(&s.conn, reason, ts)
}

// gap reports n missing bytes to the Handler, with the reason when it
// wants one.
func (a *Assembler) gap(c *Conn, d Dir, n int64, reason GapReason, ts time.Time) {
	if rh, ok := a.h.(GapReasonHandler); ok {
		rh.GapWithReason(c, d, n, reason, ts)
		return
	}
	a.h.Gap(c, d, n, ts)
}
