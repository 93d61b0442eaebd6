package track

import (
	"sort"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// pending is a request (or SEND, PING, CONNECT...) waiting for its answer.
type pending struct {
	n   int
	t   time.Time
	typ cmdType
	id  uint64 // request_id, or sequence_id for SENDs
	// Entity and lookup context of the request.
	producer *Producer
	consumer *Consumer
	topic    string
	server   string // the broker the request went to (host:port)
}

type sendKey struct{ producer, seq uint64 }

// conn is the tracking state of one connection.
type conn struct {
	s        Session
	seen     [2]bool
	requests map[uint64]*pending
	order    []*pending // requests in arrival order, for eviction (lazily cleaned)
	sends    map[sendKey][]*pending
	nSends   int
	// early are responses that arrived before their request (the two
	// directions of a lossy or reordered capture are not in lockstep);
	// whatever is left at the end was a response without request.
	orphans    []*pending // PONG, AUTH_RESPONSE, CONNECTED without request
	early      map[uint64]*pending
	earlySends map[sendKey][]*pending
	connect    *pending
	auth       []*pending
	pings      [2][]*pending
	producers  map[uint64]*Producer
	consumers  map[uint64]*Consumer
	lastSweep  time.Time
}

func newConn(rc *reassembly.Conn) *conn {
	return &conn{
		s:          Session{Conn: rc, ClientProtocol: -1, ServerProtocol: -1, Partial: !rc.HandshakeSeen},
		requests:   map[uint64]*pending{},
		sends:      map[sendKey][]*pending{},
		early:      map[uint64]*pending{},
		earlySends: map[sendKey][]*pending{},
		producers:  map[uint64]*Producer{},
		consumers:  map[uint64]*Consumer{},
	}
}

// observe marks the connection partial when a direction's first frame is
// not at the start of its stream.
func (c *conn) observe(f *decode.Frame) {
	if !c.seen[f.Dir] {
		c.seen[f.Dir] = true
		if f.Offset != 0 {
			c.s.Partial = true
		}
	}
}

// addRequest registers a request; it reports a reused id and evicts the
// oldest request beyond the cap.
func (t *Tracker) addRequest(c *conn, info *Info, p *pending) {
	if old := c.requests[p.id]; old != nil {
		t.problem(info, CodeRequestIDReused, "request_id "+utoa(p.id)+" still in flight for "+old.typ.String()+" #"+itoa(int64(old.n)))
	}
	c.requests[p.id] = p
	c.order = append(c.order, p)
	if len(c.order) > 2*len(c.requests)+64 {
		c.compact()
	}
	for len(c.requests) > t.opts.MaxPending && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if c.requests[old.id] == old {
			delete(c.requests, old.id)
			t.finding(c, reassembly.ClientToServer, p.t, old.n, old.typ, CodeStateEvicted,
				"request_id "+utoa(old.id)+" evicted: more than "+itoa(int64(t.opts.MaxPending))+" requests in flight")
		}
	}
}

// compact drops answered requests from the eviction order.
func (c *conn) compact() {
	live := c.order[:0]
	for _, p := range c.order {
		if c.requests[p.id] == p {
			live = append(live, p)
		}
	}
	clear(c.order[len(live):])
	c.order = live
}

// takeRequest removes and returns the request a response answers.
func (c *conn) takeRequest(id uint64) *pending {
	p := c.requests[id]
	if p != nil {
		delete(c.requests, id)
	}
	return p
}

func (t *Tracker) addSend(c *conn, p *pending, producer uint64) {
	k := sendKey{producer, p.id}
	c.sends[k] = append(c.sends[k], p)
	c.nSends++
	if c.nSends > t.opts.MaxPending {
		// Evict the oldest SEND in flight.
		var ok sendKey
		var oldest *pending
		for k, q := range c.sends {
			if oldest == nil || q[0].n < oldest.n {
				ok, oldest = k, q[0]
			}
		}
		c.popSend(ok, nil)
		t.finding(c, reassembly.ClientToServer, p.t, oldest.n, oldest.typ, CodeStateEvicted,
			"SEND evicted: more than "+itoa(int64(t.opts.MaxPending))+" SENDs in flight")
	}
}

// popSend removes the oldest SEND in flight for k, preferring one sent by
// the producer entity pr (a producer id reused after a close answers the
// new producer's SENDs, not the old one's).
func (c *conn) popSend(k sendKey, pr *Producer) *pending {
	q := c.sends[k]
	if len(q) == 0 {
		return nil
	}
	i := 0
	if pr != nil {
		for i < len(q) && q[i].producer != pr {
			i++
		}
		if i == len(q) {
			i = 0
		}
	}
	p := q[i]
	if len(q) == 1 {
		delete(c.sends, k)
	} else {
		c.sends[k] = append(q[:i:i], q[i+1:]...)
	}
	c.nSends--
	return p
}

// addEarly remembers a response that matched nothing (yet).
func (t *Tracker) addEarly(c *conn, f *decode.Frame, k sendKey, isSend bool) {
	p := &pending{n: f.N, t: f.Time, typ: f.Type, id: k.seq}
	if isSend {
		c.earlySends[k] = append(c.earlySends[k], p)
	} else {
		c.early[k.seq] = p
	}
	if len(c.early)+len(c.earlySends) > t.opts.MaxPending {
		t.finding(c, f.Dir, f.Time, 0, f.Type, CodeStateEvicted, "more than "+itoa(int64(t.opts.MaxPending))+
			" responses without request; they are forgotten")
		clear(c.early)
		clear(c.earlySends)
	}
}

// takeEarly returns the early response a late request matches, linking
// both ways.
func (t *Tracker) takeEarly(c *conn, info *Info, f *decode.Frame, k sendKey, isSend bool) *pending {
	var e *pending
	if isSend {
		q := c.earlySends[k]
		if len(q) == 0 {
			return nil
		}
		e = q[0]
		if len(q) == 1 {
			delete(c.earlySends, k)
		} else {
			c.earlySends[k] = q[1:]
		}
	} else {
		if e = c.early[k.seq]; e == nil {
			return nil
		}
		delete(c.early, k.seq)
	}
	lat := max(e.t.Sub(f.Time), 0)
	info.resp = Link{N: e.n, Type: e.typ, Latency: lat}
	info.Response = &info.resp
	if t.rec != nil {
		t.rec.at(e.n).request = &Link{N: f.N, Type: f.Type, Latency: lat}
	}
	return e
}

// expire applies the request timeout and the keep-alive timeout at ts.
func (t *Tracker) expire(c *conn, ts time.Time) {
	ka := t.opts.KeepAlive
	for d := range c.pings {
		for len(c.pings[d]) > 0 && ts.Sub(c.pings[d][0].t) > ka {
			p := c.pings[d][0]
			c.pings[d] = c.pings[d][1:]
			t.finding(c, reassembly.Dir(d), ts, p.n, p.typ, CodePingUnanswered, "no PONG within the keep-alive timeout "+ka.String())
		}
	}
	to := t.opts.RequestTimeout
	if to <= 0 || ts.Sub(c.lastSweep) < to/4 {
		return
	}
	c.lastSweep = ts
	var late []*pending
	for _, p := range c.requests {
		if ts.Sub(p.t) > to {
			late = append(late, p)
		}
	}
	for k, q := range c.sends {
		for len(q) > 0 && ts.Sub(q[0].t) > to {
			late = append(late, c.popSend(k, nil))
			q = c.sends[k]
		}
	}
	sort.Slice(late, func(i, j int) bool { return late[i].n < late[j].n })
	for _, p := range late {
		if p.typ != sendType {
			delete(c.requests, p.id)
		}
		if !c.s.Partial {
			t.finding(c, reassembly.ClientToServer, ts, p.n, p.typ, CodeUnanswered, "no response within "+to.String())
		}
	}
}

// closeConn reports what the connection left unanswered.
func (t *Tracker) closeConn(c *conn, ts time.Time) {
	var left []*pending
	for _, p := range c.requests {
		left = append(left, p)
	}
	for _, q := range c.sends {
		left = append(left, q...)
	}
	if c.connect != nil {
		left = append(left, c.connect)
	}
	sort.Slice(left, func(i, j int) bool { return left[i].n < left[j].n })
	if !c.s.Partial {
		for _, p := range left {
			t.finding(c, reassembly.ClientToServer, ts, p.n, p.typ, CodeUnanswered, p.typ.String()+" not answered before the connection ended")
		}
	}
	orphans := c.orphans
	for _, p := range c.early {
		orphans = append(orphans, p)
	}
	for _, q := range c.earlySends {
		orphans = append(orphans, q...)
	}
	sort.Slice(orphans, func(i, j int) bool { return orphans[i].n < orphans[j].n })
	if !c.s.Partial {
		for _, p := range orphans {
			if p.typ == pulsarapi.BaseCommand_PONG || p.typ == pulsarapi.BaseCommand_AUTH_RESPONSE || p.typ == pulsarapi.BaseCommand_CONNECTED {
				t.finding(c, reassembly.ServerToClient, ts, p.n, p.typ, CodeUnmatchedResponse, p.typ.String()+" without request")
				continue
			}
			t.finding(c, reassembly.ServerToClient, ts, p.n, p.typ, CodeUnmatchedResponse, p.typ.String()+" "+
				map[bool]string{true: "sequence_id", false: "request_id"}[p.typ == pulsarapi.BaseCommand_SEND_RECEIPT || p.typ == pulsarapi.BaseCommand_SEND_ERROR]+
				" "+utoa(p.id)+" matches no request")
		}
	}
	for d := range c.pings {
		for _, p := range c.pings[d] {
			if ts.Sub(p.t) > t.opts.KeepAlive {
				t.finding(c, reassembly.Dir(d), ts, p.n, p.typ, CodePingUnanswered, "no PONG within the keep-alive timeout "+t.opts.KeepAlive.String())
			}
		}
	}
}
