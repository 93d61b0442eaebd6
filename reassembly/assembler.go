package reassembly

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	gpr "github.com/gopacket/gopacket/reassembly"

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
	// (accepted, being detected, or ignored after detection).
	Conns, TLSConns, ActiveConns int64
	// IgnoredConns counts connections matching no port nor Detect (seen by
	// their SYN, or rejected by Detect); IgnoredSegments their segments.
	IgnoredConns, IgnoredSegments int64
	// BytesDelivered is the sum of Data lengths; TLSBytes the reassembled
	// bytes of TLS connections (counted, not delivered).
	BytesDelivered, TLSBytes int64
	// Gaps and LostBytes count Gap calls and their sizes; SnaplenBytes is
	// the part of LostBytes not captured because of the snap length.
	Gaps, LostBytes, SnaplenBytes int64
	// Retransmissions counts segments entirely before the next expected
	// byte (duplicates); Overlaps segments partly before it; OutOfOrder
	// segments ahead of it (buffered until the missing bytes arrive).
	Retransmissions, Overlaps, OutOfOrder int64
	// OutOfWindow counts segments ignored because their sequence number
	// lies more than 2^30 bytes from the next expected byte
	// (OutOfWindowHandler).
	OutOfWindow int64
	// Evictions counts connections closed by the table limit;
	// BufferLimitHits the gaps forced by the buffer limits; IdleCloses the
	// connections closed by IdleTimeout.
	Evictions, BufferLimitHits, IdleCloses int64
}

// Assembler reassembles TCP connections and hands their ordered bytes to a
// Handler, from the goroutine calling Assemble, in capture order. It wraps
// gopacket's reassembly.Assembler. It is not safe for concurrent use; to
// use several cores later, run one Assembler per shard of connections
// (hash of the 4-tuple) in its own goroutine.
type Assembler struct {
	opts  Options
	h     Handler
	pool  *gpr.StreamPool
	asm   *gpr.Assembler
	roles []uint8 // by port: roleNone, rolePulsar, roleTLS

	ctx       assemblerContext
	ts        time.Time // capture time of the segment being processed
	now       time.Time // latest capture time seen (monotonic)
	lastFlush time.Time
	flushStep time.Duration
	flushing  CloseReason // reason of the flush in progress, 0 in Assemble
	cur       *layers.TCP // segment being processed
	missing   int         // payload bytes of cur not captured (zeros in pad)
	pad       []byte

	nextID     int
	head, tail *stream // LRU list of table entries, head most recent
	stats      Stats
}

// maxMissing bounds the uncaptured bytes stood in for by zeros (the
// largest IPv4 payload).
const maxMissing = 65535

const (
	roleNone uint8 = iota
	rolePulsar
	roleTLS
)

type assemblerContext struct{ ci gopacket.CaptureInfo }

func (c *assemblerContext) GetCaptureInfo() gopacket.CaptureInfo { return c.ci }

// New returns an Assembler delivering to h, configured by opts (zero
// fields take their defaults).
func New(h Handler, opts Options) *Assembler {
	opts = opts.withDefaults()
	a := &Assembler{opts: opts, h: h, roles: make([]uint8, 1<<16)}
	for _, p := range opts.Ports {
		a.roles[p] = rolePulsar
	}
	for _, p := range opts.TLSPorts {
		a.roles[p] = roleTLS
	}
	a.pool = gpr.NewStreamPool((*factory)(a))
	a.asm = gpr.NewAssembler(a.pool)
	a.asm.MaxBufferedPagesPerConnection = bytesToPages(opts.MaxBufferedBytesPerConn)
	a.asm.MaxBufferedPagesTotal = bytesToPages(opts.MaxBufferedBytesTotal)
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
func (a *Assembler) Stats() Stats {
	s := a.stats
	return s
}

// Assemble processes one TCP segment captured at ts, flowing along netFlow
// (IP source → destination). tcp must be a decoded layer (gopacket's
// TransportFlow needs DecodeFromBytes to have run), as capture.Source
// delivers. Handler calls happen before it returns. tcp and its payload are
// not retained. Timestamps are used as a capture clock that never goes
// backwards.
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
	if a.lastFlush.IsZero() {
		a.lastFlush = a.now
	}
	// gopacket sees the monotonic capture clock, so that its idea of a
	// connection's last activity matches the LRU list's.
	a.ctx.ci.Timestamp = a.now
	a.cur = tcp
	if missing > 0 && !tcp.SYN && missing <= maxMissing {
		// Stand zeros in for the bytes not captured, so that gopacket's
		// sequence space stays right; Accept records where they are and
		// ReassembledSG reports them as a Gap.
		orig := tcp.Payload
		a.pad = append(append(a.pad[:0], orig...), make([]byte, missing)...)
		tcp.Payload = a.pad
		a.missing = missing
		a.asm.AssembleWithContext(netFlow, tcp, &a.ctx)
		tcp.Payload = orig
		a.missing = 0
	} else {
		a.asm.AssembleWithContext(netFlow, tcp, &a.ctx)
	}
	a.cur = nil
	if a.opts.MaxConns > 0 && a.stats.ActiveConns > int64(a.opts.MaxConns) {
		a.evict()
	}
	if a.flushStep > 0 && a.now.Sub(a.lastFlush) >= a.flushStep {
		a.flushOld()
	}
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
// it) and closes every open connection with CloseEndOfCapture. Call it at
// the end of input; the Assembler can be used again afterwards.
func (a *Assembler) FlushAll() {
	a.flushing = CloseEndOfCapture
	a.asm.FlushAll()
	a.flushing = 0
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

// flushOld delivers data that waited longer than GapTimeout and closes
// connections idle for longer than IdleTimeout.
func (a *Assembler) flushOld() {
	a.lastFlush = a.now
	var opt gpr.FlushOptions
	if a.opts.IdleTimeout > 0 {
		opt.TC = a.now.Add(-a.opts.IdleTimeout)
		opt.T = opt.TC
	}
	if a.opts.GapTimeout > 0 {
		opt.T = a.now.Add(-a.opts.GapTimeout)
	}
	if a.opts.IdleTimeout > 0 && opt.T.Before(opt.TC) {
		opt.T = opt.TC
	}
	a.flushing = CloseIdle
	a.asm.FlushWithOptions(opt)
	a.flushing = 0
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
	t := s.lastSeen.Add(time.Nanosecond)
	a.flushing = CloseEvicted
	a.asm.FlushWithOptions(gpr.FlushOptions{T: t, TC: t})
	a.flushing = 0
}

// LRU list of table entries.

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
