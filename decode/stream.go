package decode

import (
	"fmt"
	"time"

	"github.com/pulsarscope/pulsarscope/reassembly"
)

// StreamDecoder splits the reassembled byte streams of connections into
// frames, decodes them and hands frames and events to a Sink, in order.
// It implements reassembly.Handler and, like it, is called from one
// goroutine.
//
// Per stream (connection and direction) it buffers at most one partial
// frame, growing the buffer only as bytes arrive. Frames are numbered
// 1-based across all streams in completion order. Stream offsets count
// every byte of the direction, lost (gap) bytes included, so they match
// TCP sequence offsets.
//
// A stream whose connection handshake was not captured, and every stream
// after a gap, starts by resynchronising: bytes are skipped until
// CheckFrame finds a whole, well-formed frame. Sizes that cannot be
// trusted (frame-too-large, bad-command-size) also trigger a resync from
// the next byte.
type StreamDecoder struct {
	sink   Sink
	inSink bool // a Sink call is under way (see rescue)
	opts   Options
	dec    *Decoder
	conns  map[*reassembly.Conn]*connState
	n      int
	ev     Event
	closed StreamStats
	par    *ParallelStreamDecoder // frames are queued to it, not decoded
}

type connState struct {
	streams [2]stream
}

// stream is the framing state of one direction of a connection.
type stream struct {
	conn *reassembly.Conn
	dir  reassembly.Dir
	tls  bool

	// offset is the stream offset of buf[0] (of the next byte when buf is empty).
	offset int64
	// buf holds a partial frame (synced) or the bytes still being scanned (resync).
	buf []byte

	resync    bool
	scan      int         // first position of buf not examined yet
	cands     []candidate // positions of buf that may start a frame
	skipAhead int64       // bytes still to skip before scanning (rest of a frame cut by a gap)
	// syncAfter: the bytes to skip end where a frame whose header was
	// captured ends, so the stream is in sync again after them, without a
	// scan.
	syncAfter bool
	// dmg: buf holds the captured start (header and command) of a frame
	// at stream offset dmgOff of which dmgLost bytes were in gaps; the
	// skipAhead bytes of its rest are still to come, then it is emitted
	// (emitDamaged).
	dmg      bool
	dmgOff   int64
	dmgLost  int64
	run      int64 // bytes skipped in the current run, not yet reported
	runStart int64
	cause    *Problem // problem that started the run
	why      string   // what the skipped bytes were

	// lastTS is the capture time of the stream's last bytes (the time of
	// a frame named damaged at a gap: its captured bytes came then).
	lastTS time.Time
	// conflicts are retransmission conflicts reported for bytes not yet
	// in a frame (at most maxConflicts); recent are the last frames
	// emitted, to name the one a later conflict falls in.
	conflicts []conflictRange
	recent    [4]frameSpan
	nrecent   int

	stats StreamStats
}

// conflictRange is a range of stream offsets that a retransmission carried
// other bytes for.
type conflictRange struct{ off, end int64 }

// frameSpan is where frame n lies in its stream.
type frameSpan struct {
	off, end int64
	n        int
}

// maxConflicts bounds the retransmission conflicts a stream keeps while
// waiting for the frames they fall in.
const maxConflicts = 16

// NewStreamDecoder returns a StreamDecoder that sends frames and events to sink.
func NewStreamDecoder(sink Sink, opts Options) *StreamDecoder {
	opts = opts.withDefaults()
	return &StreamDecoder{
		sink:  sink,
		opts:  opts,
		dec:   NewDecoder(opts),
		conns: make(map[*reassembly.Conn]*connState),
	}
}

var _ reassembly.Handler = (*StreamDecoder)(nil)

// Stats returns the accounting of one direction of an open connection
// (zero when the connection is unknown or already closed: its close event
// carries the final figures).
func (sd *StreamDecoder) Stats(c *reassembly.Conn, d reassembly.Dir) StreamStats {
	if cs, ok := sd.conns[c]; ok && d <= reassembly.ServerToClient {
		return cs.streams[d].stats
	}
	return StreamStats{}
}

// Totals returns the accounting summed over every stream seen so far,
// closed or open.
func (sd *StreamDecoder) Totals() StreamStats {
	t := sd.closed
	for _, cs := range sd.conns {
		t = t.Add(cs.streams[0].stats).Add(cs.streams[1].stats)
	}
	return t
}

// Frames returns the number of frames emitted so far.
func (sd *StreamDecoder) Frames() int { return sd.n }

func (sd *StreamDecoder) event(kind EventKind, st *stream, ts time.Time) *Event {
	var e *Event
	if sd.opts.Retain {
		e = new(Event)
	} else {
		e = &sd.ev
		*e = Event{Problems: sd.ev.Problems[:0]}
	}
	e.Kind, e.Time = kind, ts
	if st != nil {
		e.Conn, e.Dir, e.Offset = st.conn, st.dir, st.offset
	}
	return e
}

// Open starts tracking a connection and emits an open event (and a tls
// event for a TLS connection, whose bytes are then counted as Ignored).
func (sd *StreamDecoder) Open(c *reassembly.Conn) {
	sd.open(c, c.FirstSeen)
}

func (sd *StreamDecoder) open(c *reassembly.Conn, ts time.Time) *connState {
	cs := &connState{}
	for d := range cs.streams {
		st := &cs.streams[d]
		st.conn, st.dir, st.tls = c, reassembly.Dir(d), c.TLS
		if !c.HandshakeSeen {
			st.enterResync(nil, 0, "stream joined mid-way (no handshake captured)")
		}
	}
	sd.conns[c] = cs
	e := sd.event(EventOpen, &cs.streams[0], ts)
	e.Offset = 0
	sd.toSink(nil, e)
	if c.TLS {
		e = sd.event(EventTLS, &cs.streams[0], ts)
		e.Offset = 0
		e.Detail = fmt.Sprintf("TLS connection to %s: not decoded", c.Server)
		sd.toSink(nil, e)
	}
	return cs
}

func (sd *StreamDecoder) stream(c *reassembly.Conn, d reassembly.Dir, ts time.Time) *stream {
	cs, ok := sd.conns[c]
	if !ok {
		cs = sd.open(c, ts)
	}
	if d > reassembly.ServerToClient {
		d = reassembly.ServerToClient
	}
	return &cs.streams[d]
}

// Data consumes the next in-order bytes of one direction.
func (sd *StreamDecoder) Data(c *reassembly.Conn, d reassembly.Dir, data []byte, ts time.Time) {
	st := sd.stream(c, d, ts)
	st.stats.Seen += int64(len(data))
	st.lastTS = ts
	if st.tls {
		st.stats.Ignored += int64(len(data))
		st.offset += int64(len(data))
		return
	}
	// A Sink panic that escaped an earlier call (and that the caller
	// recovered from) must not make rescue take a decoding bug for one.
	sd.inSink = false
	defer sd.rescue(st, ts)
	sd.feed(st, data, ts)
}

// toSink hands a frame or an event to the Sink, marking the call so that
// rescue lets a panic of the Sink through.
func (sd *StreamDecoder) toSink(f *Frame, e *Event) {
	sd.inSink = true
	if f != nil {
		sd.sink.Frame(f)
	} else {
		sd.sink.Event(e)
	}
	sd.inSink = false
}

// rescue is the last resort against a framing bug: the stream's pending
// bytes are skipped, a decoder-panic problem reported, and the stream
// resynchronised. The fuzzers guard against ever getting here. A panic of
// the Sink is not the decoder's: it goes on up to the caller.
func (sd *StreamDecoder) rescue(st *stream, ts time.Time) {
	r := recover()
	if r == nil {
		return
	}
	if sd.inSink {
		sd.inSink = false
		panic(r)
	}
	p := Problem{Code: CodeDecoderPanic, Detail: fmt.Sprint(r)}
	if !st.resync {
		st.runStart = st.offset
	}
	if st.dmg {
		st.offset, st.dmg = st.dmgOff, false
	}
	st.resync, st.scan, st.skipAhead = true, 0, 0
	st.cands = st.cands[:0]
	st.cause = &p
	st.drop(len(st.buf))
	sd.endRun(st, ts)
}

// OutOfWindow reports a segment the reassembler ignored, its sequence
// number far outside any window (reassembly.OutOfWindowHandler): an event
// with a segment-out-of-window problem; the stream and its accounting are
// unchanged.
func (sd *StreamDecoder) OutOfWindow(c *reassembly.Conn, d reassembly.Dir, n int, ts time.Time) {
	st := sd.stream(c, d, ts)
	e := sd.event(EventOutOfWindow, st, ts)
	e.Bytes = int64(n)
	e.Detail = fmt.Sprintf("segment of %d bytes ignored: its sequence number is more than 2^30 bytes from the next expected byte (offset %d)", n, st.offset)
	e.Problems = append(e.Problems, Problem{Code: CodeSegmentOutOfWindow, Detail: e.Detail})
	sd.toSink(nil, e)
}

// Pending reports whether direction d of connection c holds the start of
// a frame waiting for more bytes (reassembly.PendingHandler), or is
// skipping the rest of one: bytes the peer acknowledged are then declared
// lost at once, and the frame named in capture order.
func (sd *StreamDecoder) Pending(c *reassembly.Conn, d reassembly.Dir) bool {
	cs, ok := sd.conns[c]
	if !ok || d > reassembly.ServerToClient {
		return false
	}
	st := &cs.streams[d]
	return !st.tls && (st.dmg || !st.resync && len(st.buf) > 0 || st.resync && st.skipAhead > 0)
}

// Conflict reports a retransmission that carried other bytes than the
// copy captured first, for n bytes at stream offset off
// (reassembly.ConflictHandler): an event with a retransmission-conflict
// problem, which the frame the bytes belong to carries too when it is
// still to come (else the event names it).
func (sd *StreamDecoder) Conflict(c *reassembly.Conn, d reassembly.Dir, off, n int64, ts time.Time) {
	st := sd.stream(c, d, ts)
	if st.tls || n <= 0 {
		return
	}
	e := sd.event(EventConflict, st, ts)
	e.Offset, e.Bytes = off, n
	e.Detail = fmt.Sprintf("a retransmission carried other bytes than the copy captured first for %d bytes at offset %d; the first copy is used", n, off)
	switch {
	case off+n > st.offset:
		if len(st.conflicts) < maxConflicts {
			st.conflicts = append(st.conflicts, conflictRange{off, off + n})
		}
	default:
		if fn := st.frameAt(off); fn > 0 {
			e.Detail += fmt.Sprintf(" (frame %d)", fn)
		}
	}
	e.Problems = append(e.Problems, Problem{Code: CodeRetransmissionConflict, Detail: e.Detail})
	sd.toSink(nil, e)
}

// frameAt returns the number of the recent frame holding stream offset
// off, or 0.
func (st *stream) frameAt(off int64) int {
	for i := range min(st.nrecent, len(st.recent)) {
		if r := st.recent[i]; off >= r.off && off < r.end {
			return r.n
		}
	}
	return 0
}

// conflictIn returns the problem detail for the retransmission conflicts
// that fall in [off, end), the frame being emitted, or "", and forgets
// those that lie before end.
func (st *stream) conflictIn(off, end int64) string {
	var detail string
	k := 0
	for _, c := range st.conflicts {
		if c.off < end && c.end > off && detail == "" {
			detail = fmt.Sprintf("a retransmission carried other bytes than the copy captured first for %d bytes at offset %d (%d bytes into the frame); the first copy is decoded", c.end-c.off, c.off, max(c.off-off, 0))
		}
		if c.end > end {
			st.conflicts[k] = c
			k++
		}
	}
	st.conflicts = st.conflicts[:k]
	return detail
}

// Gap records n missing bytes of one direction: what was buffered is
// skipped, a gap event emitted, and the stream resynchronised after it.
func (sd *StreamDecoder) Gap(c *reassembly.Conn, d reassembly.Dir, n int64, ts time.Time) {
	sd.GapWithReason(c, d, n, reassembly.GapNotCaptured, ts)
}

// GapWithReason is Gap with why the bytes are missing
// (reassembly.GapReasonHandler): a limit of the reassembler (buffer,
// timeout) is named in the bytes-lost problem.
func (sd *StreamDecoder) GapWithReason(c *reassembly.Conn, d reassembly.Dir, n int64, reason reassembly.GapReason, ts time.Time) {
	st := sd.stream(c, d, ts)
	if n < 0 {
		n = 0
	}
	st.stats.Lost += n
	st.stats.Gaps++
	if st.tls {
		st.offset += n
		return
	}
	var skipAhead int64
	// inSync: the gap ends where a frame ends, or within its rest, and
	// the frame's header was captured: where the next frame starts is
	// known.
	inSync := false
	// emit: a damaged frame to emit after the gap event (its last byte
	// was in the gap).
	emit := false
	switch {
	case st.dmg:
		// More of a damaged frame's rest is missing.
		k := min(n, st.skipAhead)
		st.dmgLost += k
		st.skipAhead -= k
		inSync = n == k
		emit = st.skipAhead == 0
	case st.resync:
		if st.skipAhead > n {
			skipAhead = st.skipAhead - n
		}
		inSync = st.syncAfter && st.skipAhead >= n
		st.drop(len(st.buf))
		sd.endRun(st, ts)
	case damagedFrame(st.buf, sd.opts.MaxFrameSize):
		// Its header and command were captured: the frame is named, with
		// the bytes the gap took from it, once the rest of it after the
		// gap has come (its bytes are the frame's), at the time of the
		// packet that brought its last byte.
		rest := int64(be32(st.buf)) + 4 - int64(len(st.buf))
		k := min(rest, n)
		st.dmg, st.dmgOff, st.dmgLost = true, st.offset, k
		st.offset += int64(len(st.buf))
		st.skipAhead = rest - k
		inSync = rest >= n
		emit = st.skipAhead == 0
	case len(st.buf) > 0:
		if len(st.buf) >= 4 {
			rest := int64(be32(st.buf)) + 4 - int64(len(st.buf))
			if rest > n {
				skipAhead = rest - n
			}
			// A header that can be trusted says where the next frame
			// starts: in sync again after the frame's rest.
			inSync = len(st.buf) >= 8 && headerProblem(st.buf, sd.opts.MaxFrameSize) == nil && rest >= n
		}
		st.enterResync(nil, 0, "partial frame cut by a gap")
		st.drop(len(st.buf))
		sd.endRun(st, ts)
	}
	e := sd.event(EventGap, st, ts)
	e.Bytes = n
	e.Detail = fmt.Sprintf("%d bytes missing from the capture at offset %d", n, st.offset)
	switch reason {
	case reassembly.GapSnaplen:
		e.Detail = fmt.Sprintf("%d bytes missing from the capture at offset %d, %s (the capture kept only the start of the packets)", n, st.offset, reason)
	case reassembly.GapBufferLimit:
		e.Detail = fmt.Sprintf("%d bytes missing at offset %d, %s (out-of-order data waiting behind them filled --reassembly-buffer or --reassembly-memory)", n, st.offset, reason)
	case reassembly.GapTimeout:
		e.Detail = fmt.Sprintf("%d bytes missing at offset %d, %s (data after them waited longer than the reassembler's gap timeout)", n, st.offset, reason)
	}
	e.Problems = append(e.Problems, Problem{Code: CodeBytesLost, Detail: e.Detail})
	sd.toSink(nil, e)
	st.offset += n
	if emit {
		sd.emitDamaged(st, st.lastTS)
	}
	if st.dmg {
		return // in sync, within the damaged frame's rest
	}
	if inSync && skipAhead == 0 {
		st.resync, st.syncAfter = false, false
		return
	}
	why := "resynchronising after a gap"
	if skipAhead > 0 {
		why = "rest of a frame cut by a gap"
	}
	st.enterResync(nil, 0, why)
	st.skipAhead = skipAhead
	st.syncAfter = inSync
}

// damagedFrame reports whether buf, the start of a frame cut by a gap,
// holds its whole header and command (which the header says are plausible).
func damagedFrame(buf []byte, maxFrameSize int) bool {
	if len(buf) < 8 || headerProblem(buf, maxFrameSize) != nil {
		return false
	}
	cmd := int64(be32(buf[4:]))
	return cmd >= minCommandSize && 8+cmd <= int64(len(buf)) && 8+cmd <= int64(be32(buf))+4
}

// Close flushes both directions of a connection (truncated or skipped
// bytes get their events) and emits a close event carrying the accounting.
func (sd *StreamDecoder) Close(c *reassembly.Conn, reason reassembly.CloseReason, ts time.Time) {
	cs, ok := sd.conns[c]
	if !ok {
		cs = sd.open(c, ts)
	}
	for d := range cs.streams {
		st := &cs.streams[d]
		sd.flush(st, ts)
		if c.TLS {
			// The reassembler counts a TLS connection's bytes instead of
			// delivering them: account for them as seen and ignored.
			if n := c.Payload[d] - st.stats.Seen - st.stats.Lost; n > 0 {
				st.stats.Seen += n
				st.stats.Ignored += n
			}
		}
	}
	stats := ConnStats{cs.streams[0].stats, cs.streams[1].stats}
	e := sd.event(EventClose, &cs.streams[0], ts)
	e.Offset = 0
	e.Detail = reason.String()
	for d := reassembly.ClientToServer; d <= reassembly.ServerToClient; d++ {
		if c.Unseen(d) {
			e.Detail += "; " + d.String() + " not captured (" + (1 - d).String() + " acknowledges data from it)"
		}
	}
	e.Stats = &stats
	sd.toSink(nil, e)
	sd.closed = sd.closed.Add(stats[0]).Add(stats[1])
	delete(sd.conns, c)
}

// flush accounts for the bytes a stream still holds at its end.
func (sd *StreamDecoder) flush(st *stream, ts time.Time) {
	if st.dmg {
		// The stream ended within a damaged frame's rest: what did not
		// come is missing from it too.
		st.dmgLost += st.skipAhead
		st.skipAhead = 0
		sd.emitDamaged(st, st.lastTS)
	}
	switch {
	case st.resync:
		st.drop(len(st.buf))
		sd.endRun(st, ts)
	case len(st.buf) > 0:
		n := len(st.buf)
		e := sd.event(EventTruncated, st, ts)
		e.Bytes = int64(n)
		detail := fmt.Sprintf("stream ended %d bytes into a frame", n)
		if n >= 4 {
			detail = fmt.Sprintf("stream ended %d bytes into a frame of %d bytes", n, int64(be32(st.buf))+4)
		}
		e.Detail = detail
		e.Problems = append(e.Problems, Problem{Code: CodeTruncatedFrame, Detail: detail})
		st.stats.Truncated += int64(n)
		st.offset += int64(n)
		st.buf = nil
		sd.toSink(nil, e)
	}
	st.buf = nil
}
