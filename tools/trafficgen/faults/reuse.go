package faults

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// reuseShift is what a reused connection's copy adds to both initial
// sequence numbers: far from the original's, as a new connection's are.
const reuseShift = 0x40000000

// reuse appends a copy of connection conn (default 1) after the end of the
// capture, gap (default 1 ms) after its last packet, on the same addresses
// and ports with new initial sequence numbers: TCP port reuse. close says
// how the first copy ends: fin (as captured), none (its FIN and RST flags
// cleared: never closed when the copy's SYN comes) or rst (its first FIN
// made a RST, later FINs cleared).
func reuse(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	id, err := sp.int("conn", 1)
	if err != nil {
		return nil, err
	}
	if id < 1 || int(id) > len(a.conns) {
		return nil, fmt.Errorf("conn=%d: the capture has %d connections", id, len(a.conns))
	}
	cn := a.conns[id-1]
	gap, err := time.ParseDuration(sp.str("gap", "1ms"))
	if err != nil || gap < 0 {
		return nil, fmt.Errorf("gap=%s: not a duration", sp.str("gap", ""))
	}
	closeHow := sp.str("close", "fin")
	if closeHow != "fin" && closeHow != "none" && closeHow != "rst" {
		return nil, fmt.Errorf("close=%s: want fin, none or rst", closeHow)
	}
	var idx []int
	for i, s := range a.segs {
		if s != nil && s.conn == cn {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 || !cn.streams[0].synSeen {
		return nil, fmt.Errorf("conn=%d: its handshake is not in the capture", id)
	}
	// The first copy's end.
	changed := 0
	rstDone := false
	for _, i := range idx {
		p := c.Packets[i]
		v := a.segs[i].v
		fl := v.flags
		switch closeHow {
		case "none":
			fl &^= tcpFIN | tcpRST
		case "rst":
			if fl&tcpFIN != 0 && !rstDone {
				fl = fl&^tcpFIN | tcpRST
				rstDone = true
			} else if fl&tcpFIN != 0 || rstDone && fl&tcpRST == 0 && v.payLen == 0 {
				fl &^= tcpFIN
			}
		}
		if fl != v.flags {
			p.Data[v.l4+13] = fl
			if err := fixChecksums(c.LinkType, p.Data); err != nil {
				return nil, fmt.Errorf("packet %d: %w", p.ID, err)
			}
			changed++
		}
	}
	if closeHow == "rst" && !rstDone {
		return nil, fmt.Errorf("conn=%d has no FIN to make a RST", id)
	}
	// The copy, after the last packet of the capture.
	last := c.Packets[len(c.Packets)-1].Info.Timestamp
	first := c.Packets[idx[0]].Info.Timestamp
	shift := last.Add(gap).Sub(first)
	var ids []int
	for _, i := range idx {
		q := c.clonePacket(c.Packets[i])
		q.CopyOf = 0
		q.Info.Timestamp = q.Info.Timestamp.Add(shift)
		v := parse(c.LinkType, q.Data)
		binary.BigEndian.PutUint32(q.Data[v.l4+4:], v.seq+reuseShift)
		if v.flags&tcpACK != 0 {
			binary.BigEndian.PutUint32(q.Data[v.l4+8:], v.ack+reuseShift)
		}
		if err := fixChecksums(c.LinkType, q.Data); err != nil {
			return nil, fmt.Errorf("packet %d: %w", c.Packets[i].ID, err)
		}
		c.Packets = append(c.Packets, q)
		ids = append(ids, q.ID)
	}
	e := &Entry{Conn: int(id), Packets: ids, ConnectionsAdded: 1}
	for d := C2S; d <= S2C; d++ {
		for _, f := range cn.streams[d].frames {
			e.FramesAdded = append(e.FramesAdded, ref(cn, d, f, ""))
		}
	}
	how := map[string]string{
		"fin":  "the first copy closed as captured (FIN)",
		"none": fmt.Sprintf("the first copy never closed (FIN and RST flags cleared on %d packets)", changed),
		"rst":  "the first copy reset (its first FIN made a RST, later FINs cleared)",
	}[closeHow]
	e.Detail = fmt.Sprintf("appended a copy of connection %d (%d packets, %d frames) %s after the last packet, on the same addresses and ports with new initial sequence numbers (+0x%x): TCP port reuse, %s; every frame of both copies is decodable",
		id, len(idx), len(e.FramesAdded), gap, reuseShift, how)
	return e, nil
}

// conflict inserts, just after the targeted segment, a copy of it whose
// payload byte at (default: its last byte) is XORed with xor (default
// 0xff): a retransmission that carries other bytes than the first copy.
// The first copy is the one the receiver kept, so the stream is unchanged.
func conflict(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	idx, e, err := selectSegment(c, a, sp)
	if err != nil {
		return nil, err
	}
	s := a.segs[idx]
	if s.v.payLen == 0 || !s.v.complete() {
		return nil, fmt.Errorf("packet %d has no complete payload", idx+1)
	}
	at, err := sp.int("at", int64(s.v.payLen-1))
	if err != nil || at < 0 || at >= int64(s.v.payLen) {
		return nil, fmt.Errorf("at=%s: not a payload index of packet %d (%d bytes)", sp.str("at", ""), idx+1, s.v.payLen)
	}
	x, err := sp.int("xor", 0xff)
	if err != nil || x < 1 || x > 0xff {
		return nil, fmt.Errorf("xor=%s: want 1..255", sp.str("xor", ""))
	}
	q := c.clonePacket(c.Packets[idx])
	old := q.Data[s.v.pay+int(at)]
	q.Data[s.v.pay+int(at)] ^= byte(x)
	if err := fixChecksums(c.LinkType, q.Data); err != nil {
		return nil, err
	}
	c.Packets = slices.Insert(c.Packets, idx+1, q)
	e.Packets = []int{e.Packet, q.ID}
	off := s.off + at
	e.Bytes = s.v.payLen
	e.Old, e.New = fmt.Sprintf("%02x", old), fmt.Sprintf("%02x", old^byte(x))
	e.ExpectProblems = []string{ProblemRetransmissionConflict}
	e.Detail = fmt.Sprintf("inserted after packet %d (conn %d %s, %s) a retransmission of its %d payload bytes with byte %d (stream offset %d) changed from %s to %s; the first copy is the one kept",
		e.Packet, e.Conn, e.Dir, carried(a, idx), s.v.payLen, at, off, e.Old, e.New)
	return e, nil
}

// snaplen cuts every packet to its first len captured bytes (default
// 96), as a capture with that snap length (tcpdump -s) holds them: the
// payload bytes beyond are lost.
func snaplen(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	n, err := sp.int("len", 96)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("len=%s: want a positive length", sp.str("len", ""))
	}
	e := &Entry{}
	cut := 0
	skipped := false
	for i, p := range c.Packets {
		if len(p.Data) <= int(n) {
			continue
		}
		if s := a.segs[i]; s != nil && s.v.capLen > 0 {
			kept := int64(max(int(n)-s.v.pay, 0))
			cutFrom, cutTo := s.off+kept, s.off+int64(s.v.capLen)
			if cutFrom < cutTo {
				e.Bytes += int(cutTo - cutFrom)
				refs, sk := lossEffects(s.conn, s.dir, s.conn.streams[s.dir], cutFrom, cutTo)
				for _, r := range refs {
					e.FramesDestroyed = appendRef(e.FramesDestroyed, r)
				}
				skipped = skipped || sk
			}
		}
		p.Data = p.Data[:n]
		p.Info.CaptureLength = int(n)
		cut++
	}
	e.ExpectProblems = []string{ProblemBytesLost}
	if skipped {
		e.ExpectProblems = append(e.ExpectProblems, ProblemBytesSkipped)
	}
	e.Detail = fmt.Sprintf("cut %d packets to their first %d bytes, as a capture with snap length %d keeps them: %d payload bytes not captured", cut, n, n, e.Bytes)
	return e, nil
}

// appendRef appends r to refs unless a ref to the same frame is there.
func appendRef(refs []FrameRef, r FrameRef) []FrameRef {
	for _, x := range refs {
		if x.Conn == r.Conn && x.Dir == r.Dir && x.Index == r.Index {
			return refs
		}
	}
	return append(refs, r)
}
