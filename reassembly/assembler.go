package reassembly

import (
	"context"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pulsarscope/pulsarscope/capture"
)

// Stats are an Assembler's counters.
type Stats struct {
	// Segments is the number of TCP segments given to Assemble.
	Segments int64
	// ConnSegments counts the segments of accepted connections.
	ConnSegments int64
	// Conns counts accepted connections (Open calls), TLSConns those on a
	// TLS port; ActiveConns is the size of the connection table now
	// (accepted, being detected, or ignored after detection; closed
	// connections kept to recognise their late segments are not counted).
	Conns, TLSConns, ActiveConns int64
	// IgnoredConns counts connections matching no port nor Detect (seen by
	// their SYN, or rejected by Detect); IgnoredSegments their segments,
	// and the segments without payload that open no connection.
	IgnoredConns, IgnoredSegments int64
	// BytesDelivered is the sum of Data lengths; TLSBytes the reassembled
	// bytes of TLS connections (counted, not delivered).
	BytesDelivered, TLSBytes int64
	// Gaps and LostBytes count Gap calls and their sizes; SnaplenBytes is
	// the part of LostBytes not captured because of the snap length;
	// AckedGaps counts the gaps declared as soon as the peer acknowledged
	// data beyond them (GapAcked).
	Gaps, LostBytes, SnaplenBytes, AckedGaps int64
	// Retransmissions counts segments entirely before the next expected
	// byte (duplicates); Overlaps segments partly before it; OutOfOrder
	// segments ahead of it (buffered until the missing bytes arrive).
	Retransmissions, Overlaps, OutOfOrder int64
	// Conflicts counts retransmissions whose bytes differ from the copy
	// captured first (ConflictHandler); the first copy is the one used.
	Conflicts int64
	// OutOfWindow counts segments ignored because their sequence number
	// lies more than 2^30 bytes from the next expected byte
	// (OutOfWindowHandler).
	OutOfWindow int64
	// Reused counts connections ended by a new connection on the same
	// addresses and ports (CloseReused): a SYN with a new initial sequence
	// number on a 4-tuple that was open or closed not long before.
	Reused int64
	// AfterClose counts segments with payload that came after their
	// connection was closed (by FIN or RST) and within its sequence
	// space: retransmissions, or data the peer discarded; they are not
	// delivered.
	AfterClose int64
	// Evictions counts connections closed by the table limit;
	// BufferLimitHits the gaps forced by the buffer limits; IdleCloses the
	// connections closed by IdleTimeout.
	Evictions, BufferLimitHits, IdleCloses int64
}

// Assembler reassembles TCP connections and hands their ordered bytes to a
// Handler, from the goroutine calling Assemble, in capture order. It is not
// safe for concurrent use; to use several cores later, run one Assembler
// per shard of connections (hash of the 4-tuple) in its own goroutine.
//
// It is the project's own reassembler (docs/architecture.md says why not
// gopacket's): the capture decides when a hole is final (the peer
// acknowledged past it), a SYN with a new initial sequence number starts a
// new connection on the same 4-tuple, and a retransmission with other
// bytes than the first copy is reported.
type Assembler struct {
	opts  Options
	h     Handler
	gapH  GapReasonHandler
	oowH  OutOfWindowHandler
	confH ConflictHandler
	pendH PendingHandler
	roles []uint8 // by port: roleNone, rolePulsar, roleTLS

	conns map[connKey]*stream
	// tombs are closed connections still in conns, to recognise their
	// late segments and the SYN of a new connection on their 4-tuple;
	// oldest first.
	tombs []*stream
	// waiting are the connections with out-of-order data queued.
	waiting []*stream

	ts        time.Time // capture time of the segment being processed
	now       time.Time // latest capture time seen (monotonic)
	last      time.Time // latest packet time seen (Tick does not move it)
	lastFlush time.Time
	flushStep time.Duration
	missing   int // payload bytes of the current segment not captured

	buffered   int64 // out-of-order bytes queued, all connections
	nextID     int
	head, tail *stream // LRU list of live table entries, head most recent
	stats      Stats
}

// connKey identifies a connection by the addresses and ports of one of its
// directions (the direction of the first packet seen).
type connKey struct {
	net      gopacket.Flow
	src, dst layers.TCPPort
}

// maxMissing bounds the uncaptured bytes of a segment that are taken as
// part of the stream (the largest IPv4 payload).
const maxMissing = 65535

const (
	roleNone uint8 = iota
	rolePulsar
	roleTLS
)

// New returns an Assembler delivering to h, configured by opts (zero
// fields take their defaults).
func New(h Handler, opts Options) *Assembler {
	opts = opts.withDefaults()
	a := &Assembler{opts: opts, h: h, roles: make([]uint8, 1<<16), conns: map[connKey]*stream{}}
	a.gapH, _ = h.(GapReasonHandler)
	a.oowH, _ = h.(OutOfWindowHandler)
	a.confH, _ = h.(ConflictHandler)
	a.pendH, _ = h.(PendingHandler)
	for _, p := range opts.Ports {
		a.roles[p] = rolePulsar
	}
	for _, p := range opts.TLSPorts {
		a.roles[p] = roleTLS
	}
	step := time.Duration(0)
	for _, d := range []time.Duration{opts.GapTimeout, opts.IdleTimeout} {
		if d > 0 && (step == 0 || d < step) {
			step = d
		}
	}
	a.flushStep = step / 4
	return a
}

// Stats returns the counters so far.
func (a *Assembler) Stats() Stats { return a.stats }

// Assemble processes one TCP segment captured at ts, flowing along netFlow
// (IP source → destination). Handler calls happen before it returns. tcp
// and its payload are not retained. Timestamps are used as a capture clock
// that never goes backwards.
func (a *Assembler) Assemble(netFlow gopacket.Flow, tcp *layers.TCP, ts time.Time) {
	a.assemble(netFlow, tcp, 0, ts)
}

// AssembleTruncated is Assemble for a segment of which the last missing
// payload bytes were not captured (snaplen): those bytes are reported as a
// Gap at their place in the stream, and the stream goes on after them.
func (a *Assembler) AssembleTruncated(netFlow gopacket.Flow, tcp *layers.TCP, missing int, ts time.Time) {
	a.assemble(netFlow, tcp, missing, ts)
}

// AssemblePacket is Assemble (or AssembleTruncated) for a capture.Packet.
func (a *Assembler) AssemblePacket(p *capture.Packet) {
	a.assemble(p.NetFlow, p.TCP, p.Missing, p.Time)
}

func (a *Assembler) assemble(netFlow gopacket.Flow, tcp *layers.TCP, missing int, ts time.Time) {
	a.stats.Segments++
	a.ts = ts
	if ts.After(a.now) {
		a.now = ts
	}
	if ts.After(a.last) {
		a.last = ts
	}
	if a.lastFlush.IsZero() {
		a.lastFlush = a.now
	}
	a.missing = 0
	if missing > 0 && !tcp.SYN && missing <= maxMissing {
		a.missing = missing
	}
	a.segment(netFlow, tcp)
	if a.opts.MaxConns > 0 && a.stats.ActiveConns > int64(a.opts.MaxConns) {
		a.evict()
	}
	if a.flushStep > 0 && a.now.Sub(a.lastFlush) >= a.flushStep {
		a.flushOld()
	}
}

// segment finds (or makes) the connection of a segment and hands the
// segment to it.
func (a *Assembler) segment(netFlow gopacket.Flow, tcp *layers.TCP) {
	k := connKey{netFlow, tcp.SrcPort, tcp.DstPort}
	g := 0
	s := a.conns[k]
	if s == nil {
		rk := connKey{netFlow.Reverse(), tcp.DstPort, tcp.SrcPort}
		if s = a.conns[rk]; s != nil {
			g = 1
		}
	}
	if s != nil && s.state == stateClosed {
		if !s.newAfterClose(g, tcp) {
			if len(tcp.Payload) > 0 || a.missing > 0 {
				a.stats.AfterClose++
			} else {
				a.stats.IgnoredSegments++
			}
			return
		}
		delete(a.conns, s.key)
		s = nil
	}
	if s != nil && tcp.SYN && s.newConnection(g, tcp) {
		a.stats.Reused++
		s.end(CloseReused, GapNotCaptured, a.ts)
		delete(a.conns, s.key)
		s = nil
	}
	if s == nil {
		if s = a.newStream(netFlow, tcp); s == nil {
			return
		}
		k, g = s.key, 0
		a.conns[k] = s
	}
	s.accept(g, tcp)
}

// Tick advances the capture clock to now, when it is later, and then does
// what a packet arriving at now would do besides being assembled: when a
// flush is due it delivers data that waited longer than GapTimeout
// (reporting the gaps) and closes connections idle for longer than
// IdleTimeout. A live capture calls it while no packets arrive, so that
// idle connections are closed during a long capture. Handler calls happen
// before it returns, from the calling goroutine (the one calling Assemble).
func (a *Assembler) Tick(now time.Time) {
	if now.After(a.now) {
		a.now = now
	}
	if a.now.IsZero() {
		return // nothing assembled yet and no clock
	}
	if a.lastFlush.IsZero() {
		a.lastFlush = a.now
	}
	if a.flushStep > 0 && a.now.Sub(a.lastFlush) >= a.flushStep {
		a.flushOld()
	}
}

// FlushAll delivers everything still buffered (reporting the gaps before
// it) and closes every open connection with CloseEndOfCapture (CloseFIN
// when every direction seen had ended with a FIN), in the order they were
// opened, at the time of the last packet (so that a live capture and the
// file it wrote end the same, whatever Tick did after the last packet).
// Call it at the end of input; the Assembler can be used again afterwards.
func (a *Assembler) FlushAll() {
	end := a.last
	if end.IsZero() {
		end = a.now
	}
	var open []*stream
	for s := a.head; s != nil; s = s.next {
		open = append(open, s)
	}
	slices.SortFunc(open, func(x, y *stream) int { return x.conn.ID - y.conn.ID })
	for _, s := range open {
		s.end(CloseEndOfCapture, GapNotCaptured, end)
	}
	clear(a.conns)
	a.tombs = a.tombs[:0]
	a.waiting = a.waiting[:0]
}

// Run feeds every segment of src to the Assembler, then calls FlushAll. It
// returns nil at the end of input, else the error that stopped it (a
// truncated capture, ctx's error, ...), after flushing all the same.
func (a *Assembler) Run(ctx context.Context, src *capture.Source) error {
	for {
		p, err := src.Next(ctx)
		if err != nil {
			a.FlushAll()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		a.AssemblePacket(p)
	}
}

// flushOld delivers data that waited longer than GapTimeout, closes
// connections idle for longer than IdleTimeout, and forgets closed
// connections older than that.
func (a *Assembler) flushOld() {
	a.lastFlush = a.now
	var idleBefore time.Time
	if a.opts.IdleTimeout > 0 {
		idleBefore = a.now.Add(-a.opts.IdleTimeout)
		for a.tail != nil && a.tail.lastSeen.Before(idleBefore) {
			s := a.tail
			a.stats.IdleCloses += boolInt(s.state == stateActive)
			s.end(CloseIdle, GapTimeout, a.now)
		}
	}
	if a.opts.GapTimeout > 0 {
		before := a.now.Add(-a.opts.GapTimeout)
		for _, s := range slices.Clone(a.waiting) {
			s.giveUpBefore(before)
		}
	}
	a.compactWaiting()
	a.forgetTombs(idleBefore)
}

// forgetTombs removes from the table the closed connections last seen
// before t, and the oldest beyond MaxConns of them.
func (a *Assembler) forgetTombs(t time.Time) {
	n := 0
	for n < len(a.tombs) {
		s := a.tombs[n]
		tooMany := a.opts.MaxConns > 0 && len(a.tombs)-n > a.opts.MaxConns
		if !tooMany && (t.IsZero() || !s.lastSeen.Before(t)) {
			break
		}
		if a.conns[s.key] == s {
			delete(a.conns, s.key)
		}
		n++
	}
	a.tombs = slices.Delete(a.tombs, 0, n)
}

// compactWaiting drops the connections without queued data from the
// waiting list.
func (a *Assembler) compactWaiting() {
	a.waiting = slices.DeleteFunc(a.waiting, func(s *stream) bool {
		if s.buffered > 0 && s.state != stateClosed {
			return false
		}
		s.isWaiting = false
		return true
	})
}

// evict closes the least recently active 1/64 of the table (at least one
// connection): all connections last active no later than that one.
func (a *Assembler) evict() {
	n := a.opts.MaxConns / 64
	if n < 1 {
		n = 1
	}
	s := a.tail
	for i := 1; i < n && s != nil && s.prev != nil; i++ {
		s = s.prev
	}
	if s == nil {
		return
	}
	last := s.lastSeen
	for a.tail != nil && !a.tail.lastSeen.After(last) {
		v := a.tail
		a.stats.Evictions += boolInt(v.state == stateActive)
		v.end(CloseEvicted, GapNotCaptured, a.now)
	}
	a.compactWaiting()
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// LRU list of live table entries.

func (a *Assembler) lruPush(s *stream) {
	s.prev, s.next = nil, a.head
	if a.head != nil {
		a.head.prev = s
	}
	a.head = s
	if a.tail == nil {
		a.tail = s
	}
}

func (a *Assembler) lruRemove(s *stream) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		a.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		a.tail = s.prev
	}
	s.prev, s.next = nil, nil
}

func (a *Assembler) lruTouch(s *stream) {
	s.lastSeen = a.now
	if a.head == s {
		return
	}
	a.lruRemove(s)
	a.lruPush(s)
}
