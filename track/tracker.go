package track

import (
	"strconv"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// Tracker annotates frames with per-connection state. It implements
// decode.Sink and forwards to a track.Sink. It is not safe for concurrent use.
type Tracker struct {
	next  Sink
	opts  Options
	tb    *table
	conns map[*reassembly.Conn]*conn
	// chains are LOOKUP redirect chains by topic; consumers' delivered
	// ids are shared by consumer identity (topic, subscription, name) so
	// that acks after a reconnect still find them.
	chains     map[string]*chain
	identities map[identity]*deliveries
	rec        *Results
	info       Info
	fd         Finding
	problems   int
	// free are recycled pendings (newPending, release).
	free []*pending
	// last caches the connection of the previous frame.
	lastRC *reassembly.Conn
	last   *conn
}

// New returns a Tracker that passes every frame, event and finding to next.
func New(next Sink, opts Options) *Tracker {
	t := &Tracker{
		next:       next,
		opts:       opts.withDefaults(),
		tb:         tables,
		conns:      map[*reassembly.Conn]*conn{},
		chains:     map[string]*chain{},
		identities: map[identity]*deliveries{},
	}
	if opts.Record {
		t.rec = &Results{}
	}
	return t
}

// Results returns what this (recording) pass learned, for a second pass.
// It is nil unless Options.Record was set.
func (t *Tracker) Results() *Results { return t.rec }

// Problems returns the number of conformance problems reported so far, on
// frames and as findings.
func (t *Tracker) Problems() int { return t.problems }

// Frame tracks one frame and passes it on with its Info.
func (t *Tracker) Frame(f *decode.Frame) {
	info := &t.info
	info.reset()
	c := t.conn(f.Conn)
	info.Session = &c.s
	c.observe(f)
	t.expire(c, f.Time)
	if f.Command != nil {
		t.dispatch(c, f, info)
	}
	t.checkSession(c, f, info)
	if t.opts.Results != nil {
		t.attachLater(f.N, info)
	}
	t.problems += len(info.Problems)
	t.next.Frame(f, info)
}

// Event passes a stream event on; a close event first reports what the
// connection left unanswered, then forgets the connection.
func (t *Tracker) Event(e *decode.Event) {
	switch e.Kind {
	case decode.EventGap, decode.EventSkipped, decode.EventTruncated:
		if c := t.conns[e.Conn]; c != nil {
			c.s.Partial = true
		} else {
			t.conn(e.Conn).s.Partial = true
		}
	case decode.EventClose:
		if c := t.conns[e.Conn]; c != nil {
			t.closeConn(c, e.Time)
			delete(t.conns, e.Conn)
			if t.lastRC == e.Conn {
				t.lastRC, t.last = nil, nil
			}
		}
	}
	t.next.Event(e)
}

func (t *Tracker) conn(rc *reassembly.Conn) *conn {
	if rc == t.lastRC && t.last != nil {
		return t.last
	}
	c := t.conns[rc]
	if c == nil {
		c = newConn(rc)
		t.conns[rc] = c
	}
	t.lastRC, t.last = rc, c
	return c
}

// problem adds a conformance problem to the current frame.
func (t *Tracker) problem(info *Info, code, detail string) {
	info.Problems = append(info.Problems, decode.Problem{Code: code, Detail: detail})
}

// finding reports a problem about an earlier frame (n, 0 if none). In a
// recording pass it is remembered for frame n; in a second pass it was
// already attached to frame n and is not reported again.
func (t *Tracker) finding(c *conn, dir reassembly.Dir, ts time.Time, n int, typ cmdType, code, detail string) {
	if t.rec != nil && n > 0 {
		l := t.rec.at(n)
		l.problems = append(l.problems, problemRef{code, detail})
	}
	if t.opts.Results != nil && n > 0 {
		return
	}
	t.problems++
	t.fd = Finding{Time: ts, Conn: c.s.Conn, Dir: dir, Frame: n, Type: typ, Problem: decode.Problem{Code: code, Detail: detail}}
	t.next.Finding(&t.fd)
}

func (t *Tracker) attachLater(n int, info *Info) {
	l := t.opts.Results.frames[n]
	if l == nil {
		return
	}
	if l.response != nil {
		info.Response = l.response
	}
	if l.request != nil && info.Request == nil {
		info.Request = l.request
	}
	info.AckedBy = append(info.AckedBy, l.ackedBy...)
	for _, p := range l.problems {
		info.Problems = append(info.Problems, decode.Problem{Code: p.code, Detail: p.detail})
	}
}

// link records a request→response pair on the response's Info and, when
// recording, on the request's results.
func (t *Tracker) link(info *Info, req *pending, f *decode.Frame) {
	lat := f.Time.Sub(req.t)
	if lat < 0 {
		lat = 0
	}
	info.req = Link{N: req.n, Type: req.typ, Latency: lat}
	info.Request = &info.req
	if t.rec != nil {
		t.rec.at(req.n).response = &Link{N: f.N, Type: f.Type, Latency: lat}
	}
}

// checkFeatures reports fields used below the negotiated protocol version
// v that introduced them (the ProtocolVersion comments of PulsarApi.proto):
// broker entry metadata (v18), Key_Shared subscriptions (v14), ACK
// request_id for ack receipts (v17).
func (t *Tracker) checkFeatures(f *decode.Frame, info *Info, v int32) {
	need := func(what string, version int32) {
		if v < version {
			t.problem(info, CodeFeatureTooNew, what+" needs protocol v"+itoa(int64(version))+", negotiated v"+itoa(int64(v)))
		}
	}
	if f.BrokerEntryMetadata != nil {
		need("broker entry metadata", 18)
	}
	switch f.Type {
	case pulsarapi.BaseCommand_SUBSCRIBE:
		if f.Command.GetSubscribe().GetSubType() == pulsarapi.CommandSubscribe_Key_Shared {
			need("a Key_Shared subscription", 14)
		}
	case pulsarapi.BaseCommand_ACK:
		if a := f.Command.GetAck(); a != nil && a.RequestId != nil {
			need("ACK request_id (ack receipts)", 17)
		}
	}
}

// checkSession applies the per-connection rules that hold for any frame.
func (t *Tracker) checkSession(c *conn, f *decode.Frame, info *Info) {
	s := &c.s
	if !s.Connected && !s.Partial && !handshakeType(f.Type, f.Dir) {
		t.problem(info, CodeBeforeConnected, f.Type.String()+" "+f.Dir.String()+" before CONNECTED")
	}
	if v := s.Negotiated(); v >= 0 && f.Type >= 0 && int(f.Type) < maxType {
		if need := t.tb.minVersion[f.Type]; need > v {
			t.problem(info, CodeCommandTooNew, f.Type.String()+" needs protocol v"+itoa(int64(need))+", negotiated v"+itoa(int64(v)))
		}
		if f.Dir == reassembly.ServerToClient && v < 5 &&
			(f.Type == pulsarapi.BaseCommand_CLOSE_PRODUCER || f.Type == pulsarapi.BaseCommand_CLOSE_CONSUMER) {
			t.problem(info, CodeCommandTooNew, "broker-initiated "+f.Type.String()+" needs protocol v5, negotiated v"+itoa(int64(v)))
		}
		t.checkFeatures(f, info, v)
	}
	if f.Type == pulsarapi.BaseCommand_WATCH_TOPIC_LIST && f.Dir == reassembly.ClientToServer && s.connectSeen && !s.TopicWatchers {
		t.problem(info, CodeFeatureTooNew, "WATCH_TOPIC_LIST without supports_topic_watchers in CONNECT's feature flags")
	}
	if s.MaxMessageSize > 0 && f.Size > s.MaxMessageSize+decode.FramePadding {
		t.problem(info, CodeFrameOverMaxSize, "frame of "+itoa(int64(f.Size))+" bytes > max_message_size "+
			itoa(int64(s.MaxMessageSize))+" + "+itoa(decode.FramePadding)+" padding")
	}
}

// handshakeType reports whether a frame may precede CONNECTED.
func handshakeType(t cmdType, d reassembly.Dir) bool {
	if d == reassembly.ClientToServer {
		return t == pulsarapi.BaseCommand_CONNECT || t == pulsarapi.BaseCommand_AUTH_RESPONSE
	}
	return t == pulsarapi.BaseCommand_CONNECTED || t == pulsarapi.BaseCommand_AUTH_CHALLENGE || t == pulsarapi.BaseCommand_ERROR
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func utoa(v uint64) string { return strconv.FormatUint(v, 10) }
