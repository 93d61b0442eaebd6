package tui

import (
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track"
)

// collector turns the tracked frame sequence into Index rows. It is the
// track.Sink of the session's Tracker, and through it the decode.Sink the
// Source feeds.
type collector struct {
	x       *Index
	tracker *track.Tracker
}

func newCollector(x *Index, opts track.Options) *collector {
	c := &collector{x: x}
	c.tracker = track.New(c, opts)
	return c
}

// sink is what the Source decodes into.
func (c *collector) sink() decode.Sink { return c.tracker }

// Frame implements track.Sink: it spills the frame's bytes and appends its row.
func (c *collector) Frame(f *decode.Frame, info *track.Info) {
	x := c.x
	r := row{
		time:   f.Time.UnixNano(),
		offset: f.Offset,
		size:   uint32(f.Size),
		typ:    int16(f.Type),
	}
	if f.Conn != nil {
		r.conn = int32(f.Conn.ID)
	}
	if f.Dir != 0 {
		r.flags |= flagS2C
	}
	if f.Missing > 0 {
		r.flags |= flagDamaged
	}
	if len(f.Raw) > 0 {
		r.spill = x.store.append(f.Raw)
		r.size = uint32(len(f.Raw))
	} else {
		r.flags |= flagNoRaw
	}
	nprob := len(f.Problems) + len(info.Problems)

	x.mu.Lock()
	defer x.mu.Unlock()
	x.stats.Frame(f, info)
	i := int32(len(x.rows))
	if i == 0 {
		x.start = r.time
	}
	if info.Request != nil {
		if req := int32(info.Request.N - 1); req >= 0 && req < i {
			r.pair, r.latency = req+1, int64(info.Request.Latency)
			r.flags |= flagResponse
			q := &x.rows[req]
			if q.pair == 0 {
				q.pair, q.latency = i+1, r.latency
				q.flags |= flagRequest
			}
		}
	}
	r.entity = x.entityLocked(info, i)
	x.bytes += int64(f.Size)
	if ci := x.connLocked(f); ci != nil {
		ci.frames++
		ci.bytes += int64(f.Size)
		ci.problems += nprob
		ci.last = r.time
	}
	x.rows = append(x.rows, r)
	if nprob > 0 {
		ps := make([]decode.Problem, 0, nprob)
		ps = append(append(ps, f.Problems...), info.Problems...)
		x.addFrameProblemsLocked(i, ps, r.conn, r.time)
	}
}

// entityLocked returns the row's entity (1-based, 0 for none), registering it.
func (x *Index) entityLocked(info *track.Info, i int32) int32 {
	var k entityKey
	var e entity
	switch {
	case info.Producer != nil:
		p := info.Producer
		k = entityKey{entityProducer, connID(p.Conn), p.ID}
		e = entity{kind: entityProducer, conn: k.conn, id: p.ID, topic: p.Topic, name: p.Name}
	case info.Consumer != nil:
		cs := info.Consumer
		k = entityKey{entityConsumer, connID(cs.Conn), cs.ID}
		e = entity{kind: entityConsumer, conn: k.conn, id: cs.ID, topic: cs.Topic, name: cs.Name, subscription: cs.Subscription, subType: cs.SubType}
	default:
		return 0
	}
	id, ok := x.entByKey[k]
	if !ok || x.ents[id-1].topic != e.topic {
		// A new entity, or an id reused for another topic.
		x.ents = append(x.ents, e)
		id = int32(len(x.ents))
		x.entByKey[k] = id
	}
	ent := &x.ents[id-1]
	ent.frames++
	if ent.name == "" {
		ent.name = e.name
	}
	if ent.subType == "" {
		ent.subType = e.subType
	}
	return id
}

func (x *Index) connLocked(f *decode.Frame) *connInfo {
	if f.Conn == nil || f.Conn.ID <= 0 {
		return nil
	}
	for len(x.conns) < f.Conn.ID {
		x.conns = append(x.conns, connInfo{})
	}
	ci := &x.conns[f.Conn.ID-1]
	if ci.conn == nil {
		ci.conn = f.Conn
	}
	return ci
}

func (x *Index) addFrameProblemsLocked(i int32, ps []decode.Problem, conn int32, t int64) {
	x.frameProblems[i] = append(x.frameProblems[i], ps...)
	r := &x.rows[i]
	r.flags |= flagProblem
	r.nprob = uint8(min(255, int(r.nprob)+len(ps)))
	x.nprob += len(ps)
	for _, p := range ps {
		x.problems = append(x.problems, problemRec{frame: i, conn: conn, time: t, problem: p, onFrame: true})
	}
}

// Event implements track.Sink: connections and stream problems.
func (c *collector) Event(e *decode.Event) {
	x := c.x
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stats.Event(e)
	if e.Conn != nil && e.Conn.ID > 0 {
		for len(x.conns) < e.Conn.ID {
			x.conns = append(x.conns, connInfo{})
		}
		ci := &x.conns[e.Conn.ID-1]
		if ci.conn == nil {
			ci.conn = e.Conn
		}
		ci.problems += len(e.Problems)
		if e.Kind == decode.EventClose {
			ci.closed = e.Detail
			if ci.closed == "" {
				ci.closed = "closed"
			}
		}
	}
	for _, p := range e.Problems {
		x.nprob++
		x.problems = append(x.problems, problemRec{frame: int32(len(x.rows)) - 1, conn: connID32(e), time: e.Time.UnixNano(), problem: p})
	}
}

// Finding implements track.Sink: a problem found later about an earlier
// frame is attached to that frame.
func (c *collector) Finding(fd *track.Finding) {
	x := c.x
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stats.Finding(fd)
	if n := int32(fd.Frame - 1); fd.Frame > 0 && n < int32(len(x.rows)) {
		x.addFrameProblemsLocked(n, []decode.Problem{fd.Problem}, x.rows[n].conn, fd.Time.UnixNano())
		if ci := x.connLockedID(x.rows[n].conn); ci != nil {
			ci.problems++
		}
		return
	}
	x.nprob++
	x.problems = append(x.problems, problemRec{frame: int32(len(x.rows)) - 1, conn: int32(connID(fd.Conn)), time: fd.Time.UnixNano(), problem: fd.Problem})
}

func (x *Index) connLockedID(id int32) *connInfo {
	if id <= 0 || int(id) > len(x.conns) {
		return nil
	}
	return &x.conns[id-1]
}
