package reassembly

import (
	"bytes"
	"hash/crc32"
	"slices"
	"time"
)

// half is one direction of a connection.
type half struct {
	// seen: a segment of this direction was captured; started: next is
	// known (from its SYN, or its first segment when the capture missed
	// the handshake); synSeen and isn: its SYN and initial sequence number.
	seen, started, synSeen bool
	isn                    uint32
	// next is the sequence number of the next byte expected, off its
	// stream offset (bytes delivered plus gaps).
	next uint32
	off  int64
	// fin: a FIN was seen; finQueued and finOff: where it lies, when it
	// came ahead of the next byte; closed: the FIN was reached in order.
	fin, finQueued, closed bool
	finOff                 int64
	// firstAck is the acknowledgement number of this direction's first
	// segment with ACK set (hasAck); later ones beyond it by more than the
	// SYN and FIN show that the other direction sent data.
	firstAck uint32
	hasAck   bool
	// ackedTo is the highest acknowledgement of this direction's bytes
	// beyond next that the peer sent (acked): the receiver has every byte
	// before it.
	ackedTo uint32
	acked   bool
	// ooo are the segments (parts of them, never overlapping) that came
	// ahead of the next byte, in stream order, each with its capture time.
	ooo []qseg
	// hist are the last histLen segments delivered, with a checksum of
	// their bytes, to compare retransmissions with (histNext is where the
	// next goes).
	hist     [histLen]histSeg
	histNext int
}

// qseg is the part of a segment queued ahead of the next byte: its
// captured bytes at stream offset off, then lost bytes cut by the snap
// length. owned says data is the queue's own copy (else it is the current
// packet's, copied before the packet is given back).
type qseg struct {
	off   int64
	data  []byte
	lost  int64
	ts    time.Time
	owned bool
}

func (q *qseg) end() int64 { return q.off + int64(len(q.data)) + q.lost }

// histSeg is a delivered segment: n bytes at stream offset off, with their
// CRC-32C.
type histSeg struct {
	off int64
	n   int
	crc uint32
}

// histLen is how many delivered segments a direction remembers to compare
// retransmissions with.
const histLen = 8

// qsegOverhead is what a queued segment costs beyond its bytes, counted
// against the buffer limits so that many tiny segments are bounded too.
const qsegOverhead = 64

// maxQueuedSegs bounds the segments queued in one direction: beyond it
// the first hole is given up, as at a buffer limit.
const maxQueuedSegs = 4096

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxWindow is the largest TCP window (2^30 bytes, with window scaling):
// a segment farther than that from the next expected byte is no part of the
// stream.
const maxWindow = 1 << 30

// waiting reports whether data or a FIN waits ahead of the next byte.
func (h *half) waiting() bool { return len(h.ooo) > 0 || h.finQueued && !h.closed }

func (h *half) start(seq uint32) {
	h.started, h.next = true, seq
}

func (h *half) advance(n int64) {
	h.off += n
	h.next += uint32(n)
}

// data handles a segment's payload sent in direction g: captured bytes
// data at sequence number seq, then lost bytes not captured (snap length),
// and a FIN after them when fin is set.
func (s *stream) data(g int, seq uint32, data []byte, lost int, fin bool) {
	a := s.a
	h := &s.half[g]
	n := int64(len(data) + lost)
	if n == 0 && !fin {
		return
	}
	if !h.started {
		h.start(seq) // the handshake was not captured: start here
	}
	rel := int32(seq - h.next)
	if rel > maxWindow || rel < -maxWindow {
		if n > 0 {
			a.stats.OutOfWindow++
			if a.oowH != nil {
				a.oowH.OutOfWindow(&s.conn, s.dir(g), int(n), a.ts)
			}
		}
		return
	}
	if fin {
		h.fin = true
	}
	off := h.off + int64(rel)
	if h.closed {
		if n > 0 {
			a.stats.Retransmissions++
			s.compareDelivered(g, off, data)
		}
		return
	}
	if rel < 0 {
		k := int64(-rel)
		if k >= n {
			if n > 0 {
				a.stats.Retransmissions++
				s.compareDelivered(g, off, data)
			}
			if !fin || k > n {
				return
			}
		} else {
			a.stats.Overlaps++
			s.compareDelivered(g, off, data)
		}
		if k <= int64(len(data)) {
			data = data[k:]
		} else {
			lost -= int(k) - len(data)
			data = nil
		}
		off, n = h.off, n-k
	}
	if off == h.off && len(h.ooo) == 0 {
		s.deliver(g, data, int64(lost), a.ts)
		if fin {
			s.halfClosed(g)
		}
		return
	}
	if off > h.off {
		a.stats.OutOfOrder++
	}
	if fin && !h.finQueued {
		h.finQueued, h.finOff = true, off+n
	}
	s.insert(g, off, data, int64(lost), a.ts)
	s.drain(g, false)
	if s.state != stateActive {
		return
	}
	if past := int32(h.ackedTo - h.next); h.acked && past > 0 && past <= maxWindow && h.waiting() {
		// The peer acknowledged past the hole before this data came.
		s.giveUpTo(g, h.off+int64(past))
		if s.state != stateActive {
			return
		}
	}
	s.own(g)
	s.checkLimits(g)
}

// insert queues the parts of a segment (captured bytes data at stream
// offset off, then lost bytes) that no queued segment holds yet: the copy
// captured first is kept, and where the two copies differ a conflict is
// reported.
func (s *stream) insert(g int, off int64, data []byte, lost int64, ts time.Time) {
	h := &s.half[g]
	capEnd := off + int64(len(data))
	end := capEnd + lost
	i, _ := slices.BinarySearchFunc(h.ooo, off, func(q qseg, off int64) int {
		if q.end() <= off {
			return -1
		}
		return 1
	})
	for cur := off; cur < end; {
		if i < len(h.ooo) && h.ooo[i].off <= cur {
			q := &h.ooo[i]
			ovEnd := min(q.end(), end)
			if hi := min(ovEnd, capEnd, q.off+int64(len(q.data))); hi > cur &&
				!bytes.Equal(data[cur-off:hi-off], q.data[cur-q.off:hi-q.off]) {
				s.conflict(g, cur, hi-cur)
			}
			cur = ovEnd
			i++
			continue
		}
		pe := end
		if i < len(h.ooo) && h.ooo[i].off < pe {
			pe = h.ooo[i].off
		}
		p := qseg{off: cur, ts: ts}
		if cur < capEnd {
			p.data = data[cur-off : min(pe, capEnd)-off]
		}
		if pe > capEnd {
			p.lost = pe - max(cur, capEnd)
		}
		h.ooo = slices.Insert(h.ooo, i, p)
		i++
		cur = pe
	}
}

// own copies the queued parts of the current packet, so that the packet
// can be given back, and counts them against the buffer limits.
func (s *stream) own(g int) {
	a := s.a
	h := &s.half[g]
	for i := range h.ooo {
		q := &h.ooo[i]
		if q.owned {
			continue
		}
		q.data = bytes.Clone(q.data)
		q.owned = true
		c := int64(len(q.data)) + qsegOverhead
		s.buffered += c
		a.buffered += c
	}
	if s.buffered > 0 && !s.isWaiting {
		s.isWaiting = true
		a.waiting = append(a.waiting, s)
	}
}

// drain delivers the queued segments of direction g that the next byte
// has reached: at the current packet's time (it filled the hole before
// them), or, when late (the hole was given up), each at its own packet's.
func (s *stream) drain(g int, late bool) {
	h := &s.half[g]
	for len(h.ooo) > 0 && h.ooo[0].off <= h.off && s.state == stateActive {
		q := h.ooo[0]
		h.ooo = h.ooo[1:]
		if len(h.ooo) == 0 {
			h.ooo = nil
		}
		if q.owned {
			c := int64(len(q.data)) + qsegOverhead
			s.buffered -= c
			s.a.buffered -= c
		}
		t := s.a.ts
		if late {
			t = q.ts
		}
		s.deliver(g, q.data, q.lost, t)
	}
	if h.finQueued && !h.closed && h.off >= h.finOff && s.state == stateActive {
		s.halfClosed(g)
	}
}

// deliver hands the next bytes of direction g to the Handler: captured
// bytes as Data (counted, for a TLS connection), then lost bytes (snap
// length) as a Gap.
func (s *stream) deliver(g int, data []byte, lost int64, ts time.Time) {
	a := s.a
	h := &s.half[g]
	if n := int64(len(data)); n > 0 {
		d := s.dir(g)
		s.conn.Payload[d] += n
		if s.tls {
			a.stats.TLSBytes += n
		} else {
			a.stats.BytesDelivered += n
			h.hist[h.histNext] = histSeg{h.off, len(data), crc32.Checksum(data, castagnoli)}
			h.histNext = (h.histNext + 1) % histLen
			a.h.Data(&s.conn, d, data, ts)
		}
		h.advance(n)
	}
	if lost > 0 {
		a.stats.SnaplenBytes += lost
		s.gap(g, lost, GapSnaplen, ts)
	}
}

// gap reports n bytes of direction g missing, for reason, and moves the
// stream on after them.
func (s *stream) gap(g int, n int64, reason GapReason, ts time.Time) {
	a := s.a
	h := &s.half[g]
	d := s.dir(g)
	s.conn.Payload[d] += n
	a.stats.Gaps++
	a.stats.LostBytes += n
	switch reason {
	case GapAcked:
		a.stats.AckedGaps++
	case GapBufferLimit:
		a.stats.BufferLimitHits++
	}
	h.advance(n)
	if s.tls {
		return
	}
	if a.gapH != nil {
		a.gapH.GapWithReason(&s.conn, d, n, reason, ts)
		return
	}
	a.h.Gap(&s.conn, d, n, ts)
}

// halfClosed records that direction g reached its FIN; the connection
// ends when both have.
func (s *stream) halfClosed(g int) {
	h := &s.half[g]
	h.closed, h.fin = true, true
	h.next++ // the FIN's sequence number
	if s.half[1-g].closed && !s.ending {
		s.end(CloseFIN, GapNotCaptured, s.a.ts)
	}
}

// giveUpTo declares the bytes of direction g before stream offset upto
// lost (the receiver acknowledged them; the capture missed them), and
// delivers what was queued after each hole, at its own packet's time.
func (s *stream) giveUpTo(g int, upto int64) {
	h := &s.half[g]
	if h.finQueued && upto > h.finOff {
		upto = h.finOff
	}
	for h.off < upto && s.state == stateActive {
		e := upto
		if len(h.ooo) > 0 {
			e = min(e, h.ooo[0].off)
		}
		if e > h.off {
			s.gap(g, e-h.off, GapAcked, s.a.ts)
		}
		s.drain(g, true)
	}
}

// giveUpBefore gives up the holes before data queued since before t (the
// gap timeout).
func (s *stream) giveUpBefore(t time.Time) {
	for g := range s.half {
		h := &s.half[g]
		for len(h.ooo) > 0 && h.ooo[0].ts.Before(t) && s.state == stateActive {
			s.gap(g, h.ooo[0].off-h.off, GapTimeout, s.a.now)
			s.drain(g, true)
		}
	}
}

// giveUpAll delivers everything queued in both directions, after gaps for
// reason, the earliest captured first.
func (s *stream) giveUpAll(reason GapReason, ts time.Time) {
	for s.state == stateActive {
		g := -1
		for i := range s.half {
			if len(s.half[i].ooo) > 0 && (g < 0 || s.half[i].ooo[0].ts.Before(s.half[g].ooo[0].ts)) {
				g = i
			}
		}
		if g < 0 {
			return
		}
		h := &s.half[g]
		if e := h.ooo[0].off; e > h.off {
			s.gap(g, e-h.off, reason, ts)
		}
		s.drain(g, true)
	}
}

// checkLimits gives up holes while the out-of-order data queued goes
// beyond the buffer limits: first those of direction g of this
// connection, then of the others, the longest waiting first.
func (s *stream) checkLimits(g int) {
	a := s.a
	per, total := int64(a.opts.MaxBufferedBytesPerConn), int64(a.opts.MaxBufferedBytesTotal)
	over := func(s *stream) bool {
		return (per > 0 && s.buffered > per) || (total > 0 && a.buffered > total) ||
			len(s.half[0].ooo) > maxQueuedSegs || len(s.half[1].ooo) > maxQueuedSegs
	}
	for s.state == stateActive && s.buffered > 0 && over(s) {
		s.giveUpFirst(g)
	}
	for i := 0; total > 0 && a.buffered > total && i < len(a.waiting); i++ {
		w := a.waiting[i]
		for w.state == stateActive && w.buffered > 0 && a.buffered > total {
			w.giveUpFirst(0)
		}
	}
}

// giveUpFirst gives up the first hole of direction g (of the other, when g
// has nothing queued) at a buffer limit.
func (s *stream) giveUpFirst(g int) {
	if len(s.half[g].ooo) == 0 {
		g = 1 - g
	}
	h := &s.half[g]
	if len(h.ooo) == 0 {
		return
	}
	s.gap(g, h.ooo[0].off-h.off, GapBufferLimit, s.a.ts)
	s.drain(g, true)
}

// compareDelivered compares a retransmission (captured bytes data at
// stream offset off) with the delivered segments it covers whole, and
// reports a conflict for each that it carries other bytes for. A single
// byte just before the next one is a keepalive probe, not data.
func (s *stream) compareDelivered(g int, off int64, data []byte) {
	h := &s.half[g]
	if len(data) <= 1 || s.tls {
		return
	}
	end := off + int64(len(data))
	for _, e := range h.hist {
		if e.n == 0 || e.off < off || e.off+int64(e.n) > end {
			continue
		}
		if crc32.Checksum(data[e.off-off:][:e.n], castagnoli) != e.crc {
			s.conflict(g, e.off, int64(e.n))
		}
	}
}

// conflict reports n bytes at stream offset off of direction g captured
// twice with different contents; the copy captured first is the one used.
func (s *stream) conflict(g int, off, n int64) {
	a := s.a
	a.stats.Conflicts++
	if a.confH != nil && !s.tls {
		a.confH.Conflict(&s.conn, s.dir(g), off, n, a.ts)
	}
}
