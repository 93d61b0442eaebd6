package diff

import (
	"hash/crc32"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/render"
	"github.com/pulsarscope/pulsarscope/track"
)

// Recorder builds a Transcript from tracked frames. It implements
// track.Sink: put it behind a track.Tracker (track.New(rec, opts)), which
// is a decode.Sink. It copies what it keeps, so decoder-owned frames may be
// reused. It is not safe for concurrent use.
type Recorder struct {
	rules       map[string]Mode
	showSecrets bool
	fw          fieldWriter
	tb          *fieldTable
	conns       map[*reassembly.Conn]*connState
	nConns      int
	streams     []*stream
	bases       map[string]int
	outcomes    map[string]int
	problems    map[string]int
	latency     map[string][]time.Duration
	buf         []byte
}

// connState is what the recorder knows about one connection.
type connState struct {
	stream    *stream
	producers map[uint64]*stream
	consumers map[uint64]*stream
	requests  map[uint64]request
	// retry holds producer and consumer streams whose creation failed, by
	// base key, for the client's next attempt.
	retry map[string]*stream
	// pending places requests awaiting their answer, by frame number.
	pending map[int]position
	// lookups are the streams of the connection's LOOKUP and
	// PARTITIONED_METADATA requests, by topic: a client sends them
	// concurrently, in any order, so each topic's are a stream of their own.
	lookups map[string]*stream
}

// position is where a command went: its stream and arrival index there.
type position struct {
	stream *stream
	index  int
}

type request struct {
	stream *stream
	typ    pulsarapi.BaseCommand_Type
}

// NewRecorder returns a Recorder applying rules (see Resolve; nil means
// DefaultRules). Credentials are redacted unless showSecrets is set.
func NewRecorder(rules map[string]Mode, showSecrets bool) *Recorder {
	if rules == nil {
		rules = DefaultRules()
	}
	return &Recorder{
		rules: rules, showSecrets: showSecrets, fw: fieldWriter{rules: rules, castagnoli: crc32.MakeTable(crc32.Castagnoli), showSecrets: showSecrets}, tb: newFieldTable(),
		conns: map[*reassembly.Conn]*connState{}, bases: map[string]int{},
		outcomes: map[string]int{}, problems: map[string]int{}, latency: map[string][]time.Duration{},
	}
}

// Frame records one frame with what the tracker knows about it.
func (r *Recorder) Frame(f *decode.Frame, info *track.Info) {
	for _, p := range f.Problems {
		r.problems[p.Code]++
	}
	if info != nil {
		for _, p := range info.Problems {
			r.problems[p.Code]++
		}
		r.outcome(f, info)
	}
	if r.skipped(f.Type) {
		return
	}
	cs := r.conn(f.Conn)
	cmd := render.Redacted(f.Command, r.showSecrets)
	sub := r.tb.subCommand(cmd)
	st := r.route(cs, f, sub)
	if f.Type == pulsarapi.BaseCommand_ACK || f.Type == pulsarapi.BaseCommand_ACK_RESPONSE {
		switch r.rules[PseudoAckFrames] {
		case Ignore:
			return
		case Summarise:
			if f.Type == pulsarapi.BaseCommand_ACK && cmd != nil {
				r.ack(st, cmd.GetAck())
			}
			return
		}
	}
	c := Command{Dir: f.Dir.String(), Type: f.Type.String()}
	b := r.buf[:0]
	if sub != nil {
		b = append(b, '{')
		b = r.fw.appendFields(b, sub, st, false)
		b = r.fw.appendPayload(b, f, st, len(b) > 1)
		b = append(b, '}')
		c.Fields = append(c.Fields, b...)
	}
	r.buf = b
	for _, p := range f.Problems {
		c.Problems = append(c.Problems, p.Code)
	}
	if info != nil {
		for _, p := range info.Problems {
			c.Problems = append(c.Problems, p.Code)
		}
	}
	anchor := -1
	if info != nil && info.Request != nil && r.rules[PseudoInterleaving] == Ignore {
		if q, ok := cs.pending[info.Request.N]; ok {
			delete(cs.pending, info.Request.N)
			if q.stream == st {
				anchor = q.index
			}
		}
	}
	i := st.add(c, anchor)
	if f.Dir == reassembly.ClientToServer && r.rules[PseudoInterleaving] == Ignore && r.isRequest(f, sub) {
		cs.pending[f.N] = position{st, i}
	}
}

// isRequest reports whether a client frame expects an answer the tracker
// pairs with it: it has a request_id, or it is a SEND, CONNECT or PING.
func (r *Recorder) isRequest(f *decode.Frame, sub protoreflect.Message) bool {
	switch f.Type {
	case pulsarapi.BaseCommand_SEND, pulsarapi.BaseCommand_CONNECT, pulsarapi.BaseCommand_PING:
		return true
	}
	t := int(f.Type)
	if t < 0 || t >= maxType {
		return false
	}
	_, ok := uintField(sub, r.tb.request[t])
	return ok
}

// skipped reports whether frames of type t are left out of the streams.
func (r *Recorder) skipped(t pulsarapi.BaseCommand_Type) bool {
	return (t == pulsarapi.BaseCommand_PING || t == pulsarapi.BaseCommand_PONG) && r.rules[PseudoKeepalive] == Ignore
}

// Event records the problems of a stream event and forgets closed
// connections.
func (r *Recorder) Event(e *decode.Event) {
	for _, p := range e.Problems {
		r.problems[p.Code]++
	}
	if e.Kind == decode.EventClose {
		delete(r.conns, e.Conn)
	}
}

// Finding records a conformance problem found apart from a frame; an
// unanswered request also counts as the outcome "TYPE -> (no response)".
func (r *Recorder) Finding(fd *track.Finding) {
	r.problems[fd.Problem.Code]++
	if fd.Problem.Code == track.CodeUnanswered && !r.outcomeSkipped(fd.Type) {
		r.outcomes[fd.Type.String()+" -> (no response)"]++
	}
}

// outcome counts a response's pairing and its latency.
func (r *Recorder) outcome(f *decode.Frame, info *track.Info) {
	if info.Request == nil || r.outcomeSkipped(info.Request.Type) {
		return
	}
	key := info.Request.Type.String() + " -> " + f.Type.String()
	if info.Error != "" {
		key += " " + info.Error
	}
	r.outcomes[key]++
	rt := info.Request.Type.String()
	r.latency[rt] = append(r.latency[rt], info.Request.Latency)
}

// outcomeSkipped reports whether the outcomes of requests of type t are not
// recorded: PINGs when keep-alive frames are ignored, ACKs unless ACK frames
// are kept (their number depends on ack grouping).
func (r *Recorder) outcomeSkipped(t pulsarapi.BaseCommand_Type) bool {
	return (t == pulsarapi.BaseCommand_PING && r.rules[PseudoKeepalive] == Ignore) ||
		(t == pulsarapi.BaseCommand_ACK && r.rules[PseudoAckFrames] != "")
}

func (r *Recorder) conn(rc *reassembly.Conn) *connState {
	cs := r.conns[rc]
	if cs != nil {
		return cs
	}
	r.nConns++
	key := "connection #" + strconv.Itoa(r.nConns)
	if r.rules[PseudoServer] != Ignore {
		key += " " + rc.Server.String()
	}
	cs = &connState{
		stream:    r.newStream(key, ""),
		producers: map[uint64]*stream{}, consumers: map[uint64]*stream{},
		requests: map[uint64]request{}, retry: map[string]*stream{}, pending: map[int]position{},
		lookups: map[string]*stream{},
	}
	r.conns[rc] = cs
	return cs
}

// newStream creates a stream; base keys are numbered #1, #2… in order of
// creation.
func (r *Recorder) newStream(base, topic string) *stream {
	key := base
	if !strings.HasPrefix(base, "connection ") {
		r.bases[base]++
		key += " #" + strconv.Itoa(r.bases[base])
	}
	st := newStream(key, topic)
	r.streams = append(r.streams, st)
	return st
}

// ack adds an ACK frame's message ids to its consumer's ack set.
func (r *Recorder) ack(st *stream, a *pulsarapi.CommandAck) {
	cumulative := a.GetAckType() == pulsarapi.CommandAck_Cumulative
	for _, id := range a.GetMessageId() {
		label, order := "", 0
		switch r.rules[PseudoMessageID] {
		case Renumber:
			label = st.messageID(id.GetLedgerId(), id.GetEntryId())
			order = leadingNumber(label)
		case "":
			label = strconv.FormatUint(id.GetLedgerId(), 10) + ":" + strconv.FormatUint(id.GetEntryId(), 10)
			order = int(id.GetEntryId())
		}
		if label != "" && id.BatchIndex != nil && id.GetBatchIndex() >= 0 {
			label += "." + strconv.Itoa(int(id.GetBatchIndex()))
		}
		st.acks.add(cumulative, label, order)
	}
	if len(a.GetMessageId()) == 0 {
		st.acks.add(cumulative, "", 0)
	}
}

// Transcript returns what was recorded. Call it once, after the input ended.
func (r *Recorder) Transcript() *Transcript {
	t := &Transcript{Format: Format, Rules: r.rules, SecretsShown: r.showSecrets,
		Outcomes: r.outcomes, Problems: r.problems, Latency: map[string]Latency{}}
	for _, st := range r.streams {
		if st.acks.seen {
			st.add(Command{Dir: reassembly.ClientToServer.String(), Type: pulsarapi.BaseCommand_ACK.String(), Fields: st.acks.summary()}, -1)
		}
		t.Streams = append(t.Streams, Stream{Key: st.key, Commands: st.commands()})
	}
	sort.SliceStable(t.Streams, func(i, j int) bool { return keyLess(t.Streams[i].Key, t.Streams[j].Key) })
	for typ, ls := range r.latency {
		t.Latency[typ] = summarise(ls)
	}
	t.fill()
	return t
}

// summarise computes latency percentiles (nearest rank) in microseconds.
func summarise(ls []time.Duration) Latency {
	sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
	at := func(p float64) int64 {
		i := int(p*float64(len(ls))+0.999999) - 1
		i = max(0, min(i, len(ls)-1))
		return ls[i].Microseconds()
	}
	us := make([]int64, len(ls))
	for i, l := range ls {
		us[i] = l.Microseconds()
	}
	return Latency{Count: len(ls), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ls[len(ls)-1].Microseconds(),
		Samples: sampleLatencies(us)}
}
