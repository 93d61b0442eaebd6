package decode

import (
	"fmt"
	"time"
)

// maxIdleBuf is the buffer capacity kept by an idle stream; larger
// buffers (left by a big frame) are released.
const maxIdleBuf = 256 * 1024

// headerProblem checks the 8-byte frame header at b (len(b) >= 8) and
// returns the problem when its sizes cannot be trusted for framing.
func headerProblem(b []byte, maxFrameSize int) *Problem {
	total, cs := be32(b), be32(b[4:])
	size := int64(total) + 4
	switch {
	case size > int64(maxFrameSize):
		return &Problem{Code: CodeFrameTooLarge, Detail: fmt.Sprintf("frame of %d bytes (4 + totalSize %d) exceeds the maximum of %d", size, total, maxFrameSize)}
	case total < 4+minCommandSize || cs < minCommandSize || cs > total-4:
		return &Problem{Code: CodeBadCommandSize, Detail: fmt.Sprintf("commandSize %d impossible with totalSize %d", cs, total)}
	}
	return nil
}

// feed frames the next bytes of a stream.
func (sd *StreamDecoder) feed(st *stream, data []byte, ts time.Time) {
	for len(data) > 0 {
		switch {
		case st.dmg:
			// The rest of a damaged frame: its bytes, then the frame.
			k := min(st.skipAhead, int64(len(data)))
			st.stats.InFrames += k
			st.offset += k
			st.skipAhead -= k
			data = data[k:]
			if st.skipAhead == 0 {
				sd.emitDamaged(st, ts)
			}
		case st.resync:
			if st.skipAhead > 0 {
				k := min(st.skipAhead, int64(len(data)))
				st.stats.Skipped += k
				st.run += k
				st.offset += k
				st.skipAhead -= k
				data = data[k:]
			}
			if st.skipAhead == 0 && st.syncAfter {
				// The rest of a damaged frame is skipped: the next frame
				// starts here.
				sd.endRun(st, ts)
				st.resync, st.syncAfter, st.scan, st.cands = false, false, 0, st.cands[:0]
				continue
			}
			st.buf = append(st.buf, data...)
			data = nil
		case len(st.buf) > 0:
			data = sd.fill(st, data, ts)
		default:
			data = sd.inPlace(st, data, ts)
		}
	}
	if st.resync {
		sd.pump(st, ts)
	}
	if len(st.buf) == 0 && cap(st.buf) > maxIdleBuf {
		st.buf = nil
	}
}

// inPlace decodes the whole frames at the start of data without copying
// them, then buffers what is left.
func (sd *StreamDecoder) inPlace(st *stream, data []byte, ts time.Time) []byte {
	for len(data) >= 8 {
		if p := headerProblem(data, sd.opts.MaxFrameSize); p != nil {
			st.buf = append(st.buf[:0], data...)
			st.enterResync(p, 1, "")
			return nil
		}
		size := int(be32(data)) + 4
		if len(data) < size {
			break
		}
		sd.emit(st, data[:size], ts)
		data = data[size:]
	}
	st.buf = append(st.buf[:0], data...)
	return nil
}

// fill adds bytes to the partial frame in buf and emits it once whole.
func (sd *StreamDecoder) fill(st *stream, data []byte, ts time.Time) []byte {
	if len(st.buf) < 8 {
		k := min(8-len(st.buf), len(data))
		st.buf = append(st.buf, data[:k]...)
		data = data[k:]
		if len(st.buf) < 8 {
			return data
		}
		if p := headerProblem(st.buf, sd.opts.MaxFrameSize); p != nil {
			st.enterResync(p, 1, "")
			return data
		}
	}
	size := int(be32(st.buf)) + 4
	k := min(size-len(st.buf), len(data))
	st.buf = append(st.buf, data[:k]...)
	data = data[k:]
	if len(st.buf) == size {
		sd.emit(st, st.buf, ts)
		st.buf = st.buf[:0]
	}
	return data
}

// emit decodes one whole frame and hands it to the sink (or, in a
// ParallelStreamDecoder, queues it for decoding).
func (sd *StreamDecoder) emit(st *stream, raw []byte, ts time.Time) {
	off := st.offset
	st.offset += int64(len(raw))
	sd.frameOut(st, raw, 0, off, ts)
}

// emitDamaged emits the damaged frame a stream holds (st.dmg): its
// captured start in buf, at stream offset dmgOff, of which dmgLost bytes
// were not captured (Decoder.DecodeDamaged); the bytes of its rest that
// came are already counted in frames.
func (sd *StreamDecoder) emitDamaged(st *stream, ts time.Time) {
	st.dmg = false
	sd.frameOut(st, st.buf, st.dmgLost, st.dmgOff, ts)
	st.buf = st.buf[:0]
}

// frameOut numbers, counts and decodes (or queues) the frame whose
// captured bytes are raw, at stream offset off; lost > 0: that many of
// its bytes were not captured.
func (sd *StreamDecoder) frameOut(st *stream, raw []byte, lost, off int64, ts time.Time) {
	sd.n++
	st.stats.InFrames += int64(len(raw))
	st.stats.Frames++
	end := off + int64(be32(raw)) + 4
	st.recent[st.nrecent%len(st.recent)] = frameSpan{off, end, sd.n}
	st.nrecent++
	var conflict string
	if len(st.conflicts) > 0 {
		conflict = st.conflictIn(off, end)
	}
	if sd.par != nil {
		sd.par.frame(raw, lost, conflict, sd.n, ts, st.conn, st.dir, off)
		return
	}
	var f *Frame
	if lost > 0 {
		f = sd.dec.DecodeDamaged(raw, lost)
	} else {
		f = sd.dec.Decode(raw)
	}
	f.N, f.Time, f.Conn, f.Dir, f.Offset = sd.n, ts, st.conn, st.dir, off
	if conflict != "" {
		f.Problems = append(f.Problems, Problem{Code: CodeRetransmissionConflict, Detail: conflict})
	}
	sd.toSink(f, nil)
}

// candidate is a position of a resynchronising stream's buffer where a
// frame may start, waiting for more bytes.
type candidate struct {
	pos    int
	need   int  // bytes from pos needed to check again
	strong bool // its command is valid: only the payload is missing
	likely bool // a whole, plausible frame starts here
}

// maxCandidates bounds the positions a resync waits on at once.
const maxCandidates = 256

// enterResync starts a skipped run at buf[0] (st.offset); scanning for a
// frame starts at buf[from].
func (st *stream) enterResync(cause *Problem, from int, why string) {
	st.resync, st.syncAfter = true, false
	st.scan = from
	st.cands = st.cands[:0]
	st.runStart = st.offset
	st.cause = cause
	st.why = why
}

// drop discards the first n bytes of buf as skipped.
func (st *stream) drop(n int) {
	if n <= 0 {
		return
	}
	n = min(n, len(st.buf))
	st.run += int64(n)
	st.stats.Skipped += int64(n)
	st.offset += int64(n)
	st.buf = st.buf[:copy(st.buf, st.buf[n:])]
	st.scan = max(st.scan-n, 0)
	k := 0
	for _, c := range st.cands {
		if c.pos >= n {
			c.pos -= n
			st.cands[k] = c
			k++
		}
	}
	st.cands = st.cands[:k]
}

// pump scans a resynchronising stream for the next frame and, once found,
// decodes the whole frames buffered from there, as often as needed.
func (sd *StreamDecoder) pump(st *stream, ts time.Time) {
	for st.resync {
		if !sd.scan(st, ts) {
			return
		}
		sd.drain(st, ts)
	}
}

// scan looks for the next frame in buf, examining each position once and
// re-checking waiting candidates as their bytes arrive. The first whole,
// plausible frame wins unless an earlier candidate has a valid payload
// command and only waits for its payload: then the resync waits for it.
// Candidates still waiting on their command do not hold up a later
// plausible frame. It returns true when a frame starts at buf[0].
func (sd *StreamDecoder) scan(st *stream, ts time.Time) bool {
	k := 0
	for _, c := range st.cands {
		if !c.likely && len(st.buf)-c.pos >= c.need {
			v, need, strong := checkFrame(st.buf[c.pos:], sd.opts.MaxFrameSize)
			if v == Implausible {
				continue
			}
			c.need, c.strong, c.likely = need, strong, v == Likely
		}
		st.cands[k] = c
		k++
	}
	st.cands = st.cands[:k]
	for st.scan < len(st.buf) && len(st.cands) < maxCandidates && !st.decided() {
		v, need, strong := checkFrame(st.buf[st.scan:], sd.opts.MaxFrameSize)
		if v != Implausible {
			st.cands = append(st.cands, candidate{pos: st.scan, need: need, strong: strong, likely: v == Likely})
		}
		st.scan++
	}
	for _, c := range st.cands {
		switch {
		case c.likely:
			st.drop(c.pos)
			sd.endRun(st, ts)
			st.resync, st.scan, st.cands = false, 0, st.cands[:0]
			return true
		case c.strong:
			st.drop(c.pos)
			return false
		}
	}
	if len(st.cands) > 0 {
		st.drop(st.cands[0].pos)
	} else {
		st.drop(st.scan)
	}
	return false
}

// decided reports whether the candidates already settle the scan: a likely
// frame, or a strong candidate, not preceded by a strong one.
func (st *stream) decided() bool {
	for _, c := range st.cands {
		if c.likely || c.strong {
			return true
		}
	}
	return false
}

// drain emits the whole frames at the start of buf (synced), keeping the
// rest; a header that cannot be trusted starts a new resync.
func (sd *StreamDecoder) drain(st *stream, ts time.Time) {
	p := 0
	for len(st.buf)-p >= 8 {
		rem := st.buf[p:]
		if prob := headerProblem(rem, sd.opts.MaxFrameSize); prob != nil {
			st.buf = st.buf[:copy(st.buf, rem)]
			st.enterResync(prob, 1, "")
			return
		}
		size := int(be32(rem)) + 4
		if len(rem) < size {
			break
		}
		sd.emit(st, rem[:size], ts)
		p += size
	}
	st.buf = st.buf[:copy(st.buf, st.buf[p:])]
}

// endRun reports the current run of skipped bytes, if any, as one event.
func (sd *StreamDecoder) endRun(st *stream, ts time.Time) {
	if st.run == 0 {
		st.cause, st.why = nil, ""
		return
	}
	e := sd.event(EventSkipped, st, ts)
	e.Offset, e.Bytes = st.runStart, st.run
	if st.cause != nil {
		e.Problems = append(e.Problems, *st.cause)
	}
	detail := fmt.Sprintf("%d bytes skipped at offset %d to find the next frame", st.run, st.runStart)
	if st.why != "" {
		detail += " (" + st.why + ")"
	}
	e.Detail = detail
	e.Problems = append(e.Problems, Problem{Code: CodeBytesSkipped, Detail: detail})
	st.run, st.cause, st.why = 0, nil, ""
	st.runStart = st.offset
	sd.toSink(nil, e)
}
