package faults

import (
	"fmt"
	"slices"
	"strings"
)

// selectFrame resolves the frame selector keys conn (default 1), dir
// (default c2s) and frame=K or type=T[,nth=K] (default: the first SEND of
// the stream, or its first frame when defType is empty).
func selectFrame(a *analysis, sp Spec, defType string) (*conn, Dir, *stream, *frame, error) {
	cid, err := sp.int("conn", 1)
	if err != nil {
		return nil, 0, nil, nil, err
	}
	cn, err := a.conn(int(cid))
	if err != nil {
		return nil, 0, nil, nil, err
	}
	d, err := ParseDir(sp.str("dir", "c2s"))
	if err != nil {
		return nil, 0, nil, nil, err
	}
	st := cn.streams[d]
	if sp.has("frame") {
		k, err := sp.int("frame", 0)
		if err != nil {
			return nil, 0, nil, nil, err
		}
		if k < 1 || int(k) > len(st.frames) {
			return nil, 0, nil, nil, fmt.Errorf("conn %d %s has %d frames, no frame %d", cn.id, d, len(st.frames), k)
		}
		f := st.frames[k-1]
		if sp.has("type") && !strings.EqualFold(sp.str("type", ""), f.typeName()) {
			return nil, 0, nil, nil, fmt.Errorf("frame %d of conn %d %s is %s, not %s", k, cn.id, d, f.typeName(), sp.str("type", ""))
		}
		return cn, d, st, f, nil
	}
	typ := sp.str("type", defType)
	nth, err := sp.int("nth", 1)
	if err != nil {
		return nil, 0, nil, nil, err
	}
	if typ == "" {
		typ = "any"
	}
	n := int64(0)
	for _, f := range st.frames {
		if typ != "any" {
			t, err := commandTypeByName(typ)
			if err != nil {
				return nil, 0, nil, nil, err
			}
			if f.typ != t {
				continue
			}
		}
		if n++; n == nth {
			return cn, d, st, f, nil
		}
	}
	return nil, 0, nil, nil, fmt.Errorf("conn %d %s has %d %s frames, no number %d", cn.id, d, n, typ, nth)
}

// selectSegment resolves the segment selector: packet=N (1-based position),
// or conn/dir with offset=X (the first packet carrying stream byte X) or a
// frame selector (the first packet carrying the frame's first byte).
func selectSegment(c *Capture, a *analysis, sp Spec) (int, *Entry, error) {
	e := &Entry{}
	if sp.has("packet") {
		for _, k := range []string{"conn", "dir", "offset", "frame", "type", "nth"} {
			if sp.has(k) {
				return 0, nil, fmt.Errorf("packet= and %s= exclude each other", k)
			}
		}
		n, err := sp.int("packet", 0)
		if err != nil {
			return 0, nil, err
		}
		if n < 1 || int(n) > len(c.Packets) {
			return 0, nil, fmt.Errorf("packet %d does not exist (capture has %d)", n, len(c.Packets))
		}
		idx := int(n - 1)
		describeSegment(c, a, idx, e)
		return idx, e, nil
	}
	var st *stream
	var off int64
	var sel *frame
	if sp.has("offset") {
		if sp.has("frame") || sp.has("type") || sp.has("nth") {
			return 0, nil, fmt.Errorf("offset= excludes frame=, type= and nth=")
		}
		cid, err := sp.int("conn", 1)
		if err != nil {
			return 0, nil, err
		}
		cn, err := a.conn(int(cid))
		if err != nil {
			return 0, nil, err
		}
		d, err := ParseDir(sp.str("dir", "c2s"))
		if err != nil {
			return 0, nil, err
		}
		st = cn.streams[d]
		if off, err = sp.int("offset", 0); err != nil {
			return 0, nil, err
		}
	} else {
		_, _, s, f, err := selectFrame(a, sp, "SEND")
		if err != nil {
			return 0, nil, err
		}
		st, off, sel = s, f.off, f
	}
	if sp.has("seg") {
		// The K-th segment carrying bytes of the selected frame.
		if sel == nil {
			return 0, nil, fmt.Errorf("seg= needs a frame (type=, nth=, frame=)")
		}
		k, err := sp.int("seg", 1)
		if err != nil {
			return 0, nil, err
		}
		var in []*seg
		for _, s := range st.segs {
			if s.off < sel.end() && s.off+int64(s.v.capLen) > sel.off && !slices.ContainsFunc(in, func(t *seg) bool { return t.off == s.off }) {
				in = append(in, s)
			}
		}
		slices.SortFunc(in, func(x, y *seg) int { return int(x.off - y.off) })
		if k < 1 || int(k) > len(in) {
			return 0, nil, fmt.Errorf("seg=%d: frame #%d %s is carried by %d segments", k, sel.index, sel.typeName(), len(in))
		}
		off = in[k-1].off
	}
	cs := st.carriers(off)
	if len(cs) == 0 {
		return 0, nil, fmt.Errorf("no captured packet carries stream offset %d", off)
	}
	describeSegment(c, a, cs[0], e)
	if sel != nil {
		// Name the selected frame, even when the packet starts with another.
		e.FrameType, e.FrameIndex, e.FrameOffset = sel.typeName(), sel.index, ptr(sel.off)
	}
	return cs[0], e, nil
}

// describeSegment fills e with what packet idx is: number, connection,
// direction, stream offset, length and the frame its first byte is in.
func describeSegment(c *Capture, a *analysis, idx int, e *Entry) {
	p := c.Packets[idx]
	e.Packet = p.ID
	s := a.segs[idx]
	if s == nil {
		return
	}
	e.Conn, e.Dir = s.conn.id, s.dir.String()
	e.StreamOffset = ptr(s.off)
	e.Bytes = s.v.payLen
	e.setRef(p, 0)
	if s.v.payLen == 0 {
		return
	}
	if f := s.conn.streams[s.dir].frameAt(s.off); f != nil {
		e.FrameType, e.FrameIndex, e.FrameOffset = f.typeName(), f.index, ptr(f.off)
	}
}

// carried names the frames that packet idx carries bytes of, for details.
func carried(a *analysis, idx int) string {
	s := a.segs[idx]
	if s == nil || s.v.payLen == 0 {
		return "no payload"
	}
	var names []string
	for _, f := range framesIn(s.conn.streams[s.dir], s.off, s.off+int64(s.v.payLen)) {
		names = append(names, fmt.Sprintf("#%d %s", f.index, f.typeName()))
	}
	if len(names) == 0 {
		return "no complete frame"
	}
	return "frames " + strings.Join(names, ", ")
}

// framesIn returns the frames of st that overlap [from, to), in order.
func framesIn(st *stream, from, to int64) []*frame {
	var out []*frame
	for _, f := range st.frames {
		if f.off < to && f.end() > from {
			out = append(out, f)
		}
	}
	return out
}

// drop removes one packet. Payload bytes no other packet carries become a
// gap in the stream (bytes-lost).
func drop(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	idx, e, err := selectSegment(c, a, sp)
	if err != nil {
		return nil, err
	}
	s := a.segs[idx]
	c.Packets = slices.Delete(c.Packets, idx, idx+1)
	e.hasRef = false
	if s == nil || s.v.payLen == 0 {
		e.Detail = "dropped a packet without TCP payload; no stream bytes lost"
		return e, nil
	}
	st := s.conn.streams[s.dir]
	// Bytes of the dropped segment that no other packet carries.
	var lostFrom, lostTo int64 = -1, -1
	lost := 0
	for o := s.off; o < s.off+int64(s.v.payLen); o++ {
		others := 0
		for _, j := range st.carriers(o) {
			if j != idx {
				others++
			}
		}
		if others == 0 {
			lost++
			if lostFrom < 0 {
				lostFrom = o
			}
			lostTo = o + 1
		}
	}
	if lost == 0 {
		e.Detail = fmt.Sprintf("dropped packet %d (conn %d %s, stream bytes %d..%d); all its bytes are carried by other packets, nothing lost",
			e.Packet, e.Conn, e.Dir, s.off, s.off+int64(s.v.payLen))
		return e, nil
	}
	e.Bytes = lost
	e.ExpectProblems = []string{ProblemBytesLost}
	fs := framesIn(st, lostFrom, lostTo)
	refs, skipped := lossEffects(s.conn, s.dir, st, lostFrom, lostTo)
	e.FramesDestroyed = refs
	if skipped {
		e.ExpectProblems = append(e.ExpectProblems, ProblemBytesSkipped)
	}
	aligned := len(fs) > 0 && fs[0].off == lostFrom && fs[len(fs)-1].end() == lostTo
	var names []string
	for _, f := range fs {
		names = append(names, fmt.Sprintf("#%d %s", f.index, f.typeName()))
	}
	e.Detail = fmt.Sprintf("dropped packet %d: %d bytes of conn %d %s lost at stream offset %d (frames %s)",
		e.Packet, lost, e.Conn, e.Dir, lostFrom, strings.Join(names, ", "))
	if !aligned {
		if !skipped {
			e.MayProblems = []string{ProblemBytesSkipped}
		}
		e.Detail += "; the gap is not on frame boundaries, so decoding resumes mid-frame"
	} else {
		e.Detail += "; the gap covers whole frames, decoding resumes at the next frame"
	}
	if lostTo >= int64(len(st.data)) && !st.gapAfter {
		e.Detail += "; WARNING: the gap is at the end of the stream data"
	}
	return e, nil
}

// nextDataPacket returns the index of the next packet after idx with
// payload in the same stream, or -1.
func nextDataPacket(a *analysis, idx int) int {
	s := a.segs[idx]
	if s == nil {
		return -1
	}
	for j := idx + 1; j < len(a.segs); j++ {
		t := a.segs[j]
		if t != nil && t.conn == s.conn && t.dir == s.dir && t.v.payLen > 0 {
			return j
		}
	}
	return -1
}

// targetAfter resolves after=M (1-based position) or the default: the
// next data packet of the same stream (reorder) or idx itself (duplicate).
func targetAfter(c *Capture, a *analysis, sp Spec, idx int, defNext bool) (int, error) {
	if sp.has("after") {
		m, err := sp.int("after", 0)
		if err != nil {
			return 0, err
		}
		if m < 1 || int(m) > len(c.Packets) {
			return 0, fmt.Errorf("after=%d: no such packet", m)
		}
		return int(m - 1), nil
	}
	if !defNext {
		return idx, nil
	}
	j := nextDataPacket(a, idx)
	if j < 0 {
		return 0, fmt.Errorf("packet %d is the last data packet of its stream; give after=", idx+1)
	}
	return j, nil
}

// ackedBefore returns the index of the first packet after idx, up to to,
// that is of the other direction of idx's connection and acknowledges
// bytes of packet idx, or -1.
func ackedBefore(a *analysis, idx, to int) int {
	s := a.segs[idx]
	if s == nil {
		return -1
	}
	for j := idx + 1; j <= to && j < len(a.segs); j++ {
		t := a.segs[j]
		if t != nil && t.conn == s.conn && t.dir != s.dir && t.v.flags&tcpACK != 0 && int32(t.v.ack-s.v.seq) > 0 {
			return j
		}
	}
	return -1
}

// lossEffects classifies the frames of stream st (of connection cn,
// direction d) that the loss of stream bytes [from, to) hits, as
// pulsarscope reports them: "absent" (all of it lost), "damaged" (its
// header and command were captured before the loss: still a frame, named
// with a bytes-lost problem) or "partial" (its start lost, or cut before
// its command was whole: not decodable); skipped says the decoder skips
// captured bytes because of the loss (a partial frame's captured start,
// or its rest after the loss).
func lossEffects(cn *conn, d Dir, st *stream, from, to int64) (refs []FrameRef, skipped bool) {
	for _, f := range framesIn(st, from, to) {
		switch {
		case f.off >= from && f.end() <= to:
			refs = append(refs, ref(cn, d, f, "absent"))
		case f.off < from && f.off+8+int64(f.commandSize) <= from:
			// Its captured rest after the loss belongs to it: not skipped.
			refs = append(refs, ref(cn, d, f, "damaged"))
		default:
			refs = append(refs, ref(cn, d, f, "partial"))
			skipped = skipped || f.off < from || f.end() > to
		}
	}
	return refs, skipped
}

// reorder moves one packet to just after another, later packet; the moved
// packet takes that packet's timestamp so time stays monotonic.
func reorder(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	idx, e, err := selectSegment(c, a, sp)
	if err != nil {
		return nil, err
	}
	to, err := targetAfter(c, a, sp, idx, true)
	if err != nil {
		return nil, err
	}
	if to <= idx {
		return nil, fmt.Errorf("after=%d must be later than packet %d", to+1, idx+1)
	}
	if j := ackedBefore(a, idx, to); j >= 0 {
		return nil, fmt.Errorf("packet %d (%s) is acknowledged by packet %d of the other direction before packet %d: moving it after that would be impossible on a wire (the receiver acknowledged bytes it had not received); choose a packet in flight with the next one of its stream", idx+1, carried(a, idx), j+1, to+1)
	}
	p := c.Packets[idx]
	after := c.Packets[to]
	p.Info.Timestamp = after.Info.Timestamp
	c.Packets = slices.Delete(c.Packets, idx, idx+1)
	c.Packets = slices.Insert(c.Packets, to, p)
	e.Detail = fmt.Sprintf("moved packet %d (conn %d %s, %s) to just after packet %d (%d positions later) with that packet's timestamp; the stream is complete, only out of order",
		e.Packet, e.Conn, e.Dir, carried(a, idx), after.ID, to-idx)
	return e, nil
}

// duplicate inserts a copy of a packet (a retransmission) just after the
// original or after=M, with the timestamp of the packet it follows.
func duplicate(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	idx, e, err := selectSegment(c, a, sp)
	if err != nil {
		return nil, err
	}
	to, err := targetAfter(c, a, sp, idx, false)
	if err != nil {
		return nil, err
	}
	if to < idx {
		return nil, fmt.Errorf("after=%d must not be earlier than packet %d", to+1, idx+1)
	}
	q := c.clonePacket(c.Packets[idx])
	q.Info.Timestamp = c.Packets[to].Info.Timestamp
	c.Packets = slices.Insert(c.Packets, to+1, q)
	e.Packets = []int{e.Packet, q.ID}
	e.Detail = fmt.Sprintf("inserted a copy of packet %d (conn %d %s, %s: a retransmission of %d payload bytes) after packet %d, as packet %d at that time",
		e.Packet, e.Conn, e.Dir, carried(a, idx), e.Bytes, c.Packets[to].ID, to+2)
	return e, nil
}

// cutStart removes the first packets of one connection (both directions)
// and trims the first kept packet, so that the chosen direction's capture
// starts `into` bytes inside the chosen frame.
func cutStart(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	cn, d, st, f, err := selectFrame(a, sp, "")
	if err != nil {
		return nil, err
	}
	if !sp.has("frame") && !sp.has("type") {
		if len(st.frames) < 2 {
			return nil, fmt.Errorf("conn %d %s has fewer than 2 frames", cn.id, d)
		}
		f = st.frames[1]
	}
	into, err := sp.int("into", int64(f.totalSize+4)/2)
	if err != nil {
		return nil, err
	}
	if into < 1 || into >= int64(f.totalSize)+4 {
		return nil, fmt.Errorf("into=%d is not inside frame %d (%d bytes)", into, f.index, f.totalSize+4)
	}
	x := f.off + into
	cs := st.carriers(x)
	if len(cs) == 0 {
		return nil, fmt.Errorf("no captured packet carries stream offset %d", x)
	}
	pIdx := cs[0]
	s := a.segs[pIdx]
	p := c.Packets[pIdx]
	trim := int(x - s.off)
	if trim > 0 {
		if err := trimPayload(c.LinkType, p, trim); err != nil {
			return nil, fmt.Errorf("trimming packet %d: %w", p.ID, err)
		}
	}
	// Remove the connection's earlier packets.
	removed := 0
	var kept []*Packet
	for i, q := range c.Packets {
		if i < pIdx && a.segs[i] != nil && a.segs[i].conn == cn {
			removed++
			continue
		}
		kept = append(kept, q)
	}
	c.Packets = kept
	e := &Entry{Packet: p.ID, Conn: cn.id, Dir: d.String(), StreamOffset: ptr(x),
		FrameType: f.typeName(), FrameIndex: f.index, FrameOffset: ptr(f.off), Bytes: int(x)}
	e.setRef(p, 0)
	e.ExpectProblems = []string{ProblemBytesSkipped}
	for _, g := range st.frames {
		switch {
		case g.end() <= x:
			e.FramesDestroyed = append(e.FramesDestroyed, ref(cn, d, g, "absent"))
		case g.off < x:
			e.FramesDestroyed = append(e.FramesDestroyed, ref(cn, d, g, "partial"))
		}
	}
	// The other direction starts at its first kept data packet.
	od := 1 - d
	ost := cn.streams[od]
	var oStart int64 = -1
	for _, t := range ost.segs {
		if t.idx > pIdx {
			oStart = t.off
			break
		}
	}
	oNote := "the other direction has no data left"
	if oStart >= 0 {
		oNote = fmt.Sprintf("%s starts at stream offset %d", od, oStart)
		for _, g := range ost.frames {
			switch {
			case g.end() <= oStart:
				e.FramesDestroyed = append(e.FramesDestroyed, ref(cn, od, g, "absent"))
			case g.off < oStart:
				e.FramesDestroyed = append(e.FramesDestroyed, ref(cn, od, g, "partial"))
				oNote += fmt.Sprintf(", inside frame #%d %s (bytes-skipped there too)", g.index, g.typeName())
			}
		}
	}
	e.Detail = fmt.Sprintf("removed the first %d packets of conn %d (handshake included) and %d leading payload bytes of packet %d: %s now starts at stream offset %d, %d bytes into frame #%d %s (%d bytes); %s",
		removed, cn.id, trim, p.ID, d, x, into, f.index, f.typeName(), f.totalSize+4, oNote)
	return e, nil
}
