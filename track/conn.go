package track

import (
	"slices"
	"sort"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// pending is a request (or SEND, PING, CONNECT...) waiting for its answer.
// Pendings are recycled (Tracker.newPending, Tracker.release): one is
// referenced from exactly one place of its conn until it is answered,
// evicted or reported, and released then.
type pending struct {
	n   int
	t   time.Time
	typ cmdType
	id  uint64 // request_id, or sequence_id for SENDs
	// Entity and lookup context of the request.
	producer *Producer
	consumer *Consumer
	topic    string
	// next chains the SENDs in flight with the same sendKey, oldest first.
	next *pending
}

type sendKey struct{ producer, seq uint64 }

// reqRef is a request in the eviction order: live while requests[id] is
// still the request of frame n.
type reqRef struct {
	id uint64
	n  int
}

// reqTable holds the requests in flight by request_id: the first few in
// a small array searched linearly (clients keep few requests in flight;
// no hashing, no map to make per connection), the others in a map.
type reqTable struct {
	small [8]*pending
	n     int // used entries of small
	big   map[uint64]*pending
}

func (r *reqTable) get(id uint64) *pending {
	for _, p := range r.small[:r.n] {
		if p.id == id {
			return p
		}
	}
	if r.big != nil {
		return r.big[id]
	}
	return nil
}

// put adds p, returning the request it replaces (same id), if any.
func (r *reqTable) put(p *pending) *pending {
	for i, q := range r.small[:r.n] {
		if q.id == p.id {
			r.small[i] = p
			return q
		}
	}
	if q := r.big[p.id]; q != nil {
		r.big[p.id] = p
		return q
	}
	if r.n < len(r.small) {
		r.small[r.n] = p
		r.n++
		return nil
	}
	if r.big == nil {
		r.big = map[uint64]*pending{}
	}
	r.big[p.id] = p
	return nil
}

func (r *reqTable) del(id uint64) {
	for i, q := range r.small[:r.n] {
		if q.id == id {
			r.n--
			r.small[i], r.small[r.n] = r.small[r.n], nil
			return
		}
	}
	delete(r.big, id)
}

func (r *reqTable) len() int { return r.n + len(r.big) }

// appendTo appends every request in flight to dst (in no order).
func (r *reqTable) appendTo(dst []*pending) []*pending {
	dst = append(dst, r.small[:r.n]...)
	for _, p := range r.big {
		dst = append(dst, p)
	}
	return dst
}

// conn is the tracking state of one connection.
type conn struct {
	s        Session
	seen     [2]bool
	requests reqTable
	order    []reqRef // requests in arrival order, for eviction (lazily cleaned)
	// sends are the SENDs in flight by producer and sequence id: the oldest,
	// chained (pending.next) to the later ones with the same key.
	sends  map[sendKey]*pending
	nSends int
	// early are responses that arrived before their request (the two
	// directions of a lossy or reordered capture are not in lockstep);
	// whatever is left at the end was a response without request. The
	// maps are made on first use.
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
		s:         Session{Conn: rc, ClientProtocol: -1, ServerProtocol: -1, Partial: !rc.HandshakeSeen},
		sends:     map[sendKey]*pending{},
		producers: map[uint64]*Producer{},
		consumers: map[uint64]*Consumer{},
	}
}

// maxFree bounds the recycled pendings a Tracker keeps.
const maxFree = 4096

// newPending returns a (recycled) pending for frame f.
func (t *Tracker) newPending(f *decode.Frame, id uint64) *pending {
	var p *pending
	if n := len(t.free); n > 0 {
		p = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		p = &pending{}
	}
	p.n, p.t, p.typ, p.id = f.N, f.Time, f.Type, id
	return p
}

// recycle is turned off by TestRecycleEquivalence to compare.
var recycle = true

// release recycles p, which nothing references any more.
func (t *Tracker) release(p *pending) {
	if p == nil || len(t.free) >= maxFree || !recycle {
		return
	}
	*p = pending{}
	t.free = append(t.free, p)
}

// observe marks the connection partial when a direction's first frame is
// not at the start of its stream, or when a direction is missing from the
// capture altogether (reassembly.Conn.Unseen).
func (c *conn) observe(f *decode.Frame) {
	c.checkUnseen()
	if !c.seen[f.Dir] {
		c.seen[f.Dir] = true
		if f.Offset != 0 {
			c.s.Partial = true
		}
	}
}

// checkUnseen marks the connection partial when the capture lacks one of
// its directions: rules that need both (answers, handshake, deliveries)
// are not applied to it.
func (c *conn) checkUnseen() {
	if !c.s.Partial && (c.s.Conn.Unseen(reassembly.ClientToServer) || c.s.Conn.Unseen(reassembly.ServerToClient)) {
		c.s.Partial = true
	}
}

// addRequest registers a request; it reports a reused id and evicts the
// oldest request beyond the cap.
func (t *Tracker) addRequest(c *conn, info *Info, p *pending) {
	old := c.requests.put(p)
	if old != nil {
		t.problem(info, CodeRequestIDReused, "request_id "+utoa(p.id)+" still in flight for "+old.typ.String()+" #"+itoa(int64(old.n)))
	}
	t.release(old) // it can no longer be answered
	if len(c.order) == cap(c.order) && len(c.order) > 0 {
		// Full: drop the answered requests before growing, and grow
		// only when most are still in flight (amortised O(1)).
		c.compact()
		if len(c.order) > cap(c.order)/2 {
			c.order = slices.Grow(c.order, cap(c.order))
		}
	}
	if c.order == nil {
		c.order = make([]reqRef, 0, 4)
	}
	c.order = append(c.order, reqRef{p.id, p.n})
	for c.requests.len() > t.opts.MaxPending && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if q := c.requests.get(old.id); q != nil && q.n == old.n {
			c.requests.del(old.id)
			t.finding(c, reassembly.ClientToServer, p.t, q.n, q.typ, CodeStateEvicted,
				"request_id "+utoa(q.id)+" evicted: more than "+itoa(int64(t.opts.MaxPending))+" requests in flight")
			t.release(q)
		}
	}
}

// compact drops answered requests from the eviction order.
func (c *conn) compact() {
	live := c.order[:0]
	for _, r := range c.order {
		if q := c.requests.get(r.id); q != nil && q.n == r.n {
			live = append(live, r)
		}
	}
	c.order = live
}

func (t *Tracker) addSend(c *conn, p *pending, producer uint64) {
	k := sendKey{producer, p.id}
	if q := c.sends[k]; q != nil {
		for q.next != nil {
			q = q.next
		}
		q.next = p
	} else {
		c.sends[k] = p
	}
	c.nSends++
	if c.nSends > t.opts.MaxPending {
		// Evict the oldest SEND in flight.
		var ok sendKey
		var oldest *pending
		for k, q := range c.sends {
			if oldest == nil || q.n < oldest.n {
				ok, oldest = k, q
			}
		}
		c.popSend(ok, nil)
		t.finding(c, reassembly.ClientToServer, p.t, oldest.n, oldest.typ, CodeStateEvicted,
			"SEND evicted: more than "+itoa(int64(t.opts.MaxPending))+" SENDs in flight")
		t.release(oldest)
	}
}

// popSend removes the oldest SEND in flight for k, preferring one sent by
// the producer entity pr (a producer id reused after a close answers the
// new producer's SENDs, not the old one's).
func (c *conn) popSend(k sendKey, pr *Producer) *pending {
	head := c.sends[k]
	if head == nil {
		return nil
	}
	var prev *pending
	p := head
	if pr != nil {
		for q, b := head, (*pending)(nil); q != nil; b, q = q, q.next {
			if q.producer == pr {
				p, prev = q, b
				break
			}
		}
	}
	switch {
	case prev != nil:
		prev.next = p.next
	case p.next != nil:
		c.sends[k] = p.next
	default:
		delete(c.sends, k)
	}
	p.next = nil
	c.nSends--
	return p
}

// addEarly remembers a response that matched nothing (yet).
func (t *Tracker) addEarly(c *conn, f *decode.Frame, k sendKey, isSend bool) {
	p := t.newPending(f, k.seq)
	if c.early == nil {
		c.early, c.earlySends = map[uint64]*pending{}, map[sendKey][]*pending{}
	}
	if isSend {
		c.earlySends[k] = append(c.earlySends[k], p)
	} else {
		c.early[k.seq] = p
	}
	if len(c.early)+len(c.earlySends) > t.opts.MaxPending {
		t.finding(c, f.Dir, f.Time, 0, f.Type, CodeStateEvicted, "more than "+itoa(int64(t.opts.MaxPending))+
			" responses without request; they are forgotten")
		for _, e := range c.early {
			t.release(e)
		}
		for _, q := range c.earlySends {
			for _, e := range q {
				t.release(e)
			}
		}
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
			t.release(p)
		}
	}
	to := t.opts.RequestTimeout
	if to <= 0 || ts.Sub(c.lastSweep) < to/4 {
		return
	}
	c.lastSweep = ts
	var late []*pending
	for _, p := range c.requests.appendTo(nil) {
		if ts.Sub(p.t) > to {
			late = append(late, p)
		}
	}
	for k, q := range c.sends {
		for q != nil && ts.Sub(q.t) > to {
			late = append(late, c.popSend(k, nil))
			q = c.sends[k]
		}
	}
	sort.Slice(late, func(i, j int) bool { return late[i].n < late[j].n })
	for _, p := range late {
		if p.typ != sendType {
			c.requests.del(p.id)
		}
		if !c.s.Partial {
			t.finding(c, reassembly.ClientToServer, ts, p.n, p.typ, CodeUnanswered, "no response within "+to.String())
		}
		t.release(p)
	}
}

// closeConn reports what the connection left unanswered.
func (t *Tracker) closeConn(c *conn, ts time.Time) {
	c.checkUnseen()
	left := c.requests.appendTo(nil)
	for _, q := range c.sends {
		for ; q != nil; q = q.next {
			left = append(left, q)
		}
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
	if !c.s.Partial {
		type left struct {
			uuid string
			pr   *Producer
			st   *chunkState
		}
		var ls []left
		for _, pr := range c.producers {
			for uuid, st := range pr.chunks {
				ls = append(ls, left{uuid, pr, st})
			}
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i].st.first < ls[j].st.first })
		for _, l := range ls {
			t.finding(c, reassembly.ClientToServer, ts, l.st.first, pulsarapi.BaseCommand_SEND, CodeChunkIncomplete,
				"message "+l.uuid+" of producer_id "+utoa(l.pr.ID)+": "+itoa(int64(l.st.next))+" of "+itoa(int64(l.st.total))+" chunks sent")
		}
	}
	for d := range c.pings {
		for _, p := range c.pings[d] {
			if ts.Sub(p.t) > t.opts.KeepAlive {
				t.finding(c, reassembly.Dir(d), ts, p.n, p.typ, CodePingUnanswered, "no PONG within the keep-alive timeout "+t.opts.KeepAlive.String())
			}
			t.release(p)
		}
	}
	for _, p := range left {
		t.release(p)
	}
	for _, p := range orphans {
		t.release(p)
	}
}
