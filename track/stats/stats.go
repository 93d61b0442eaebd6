// Package stats aggregates tracked frames into the tables of
// 'pulsarscope stats': counts by command, service response times,
// conversations, producers, consumers, problems and byte accounting.
package stats

import (
	"sort"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/internal/chunked"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// maxFirstFrames is how many frame numbers a problem row lists.
const maxFirstFrames = 5

// Collector is a track.Sink that aggregates everything it is given. Call
// Report at the end.
type Collector struct {
	// counts and srt are by command type: in the arrays for the types of
	// the schema's range, in the maps beyond it (hostile or newer types).
	counts    [maxType]*Count
	countsX   map[cmdType]*Count
	srt       [maxType]*srtAcc
	srtX      map[cmdType]*srtAcc
	convs     map[*reassembly.Conn]*convAcc
	convOrder []*convAcc
	producers map[*track.Producer]*prodAcc
	prodOrder []*prodAcc
	consumers map[consKey]*consAcc
	consOrder []*consAcc
	// consRefs are the consumer entities seen, with the row they count in.
	consRefs map[*track.Consumer]*consRef
	problems map[string]*ProblemRow
	streams  []StreamRow
	capture  []CaptureRow
	// The previous frame's conversation, producer and consumer: frames
	// come in runs on one connection and one entity.
	lastRC   *reassembly.Conn
	lastConv *convAcc
	lastP    *track.Producer
	lastPA   *prodAcc
	lastCS   *track.Consumer
	lastCR   *consRef
}

// maxType bounds the command types counted in arrays (the schema's are
// below 100).
const maxType = 128

// New returns an empty Collector.
func New() *Collector {
	return &Collector{
		convs:     map[*reassembly.Conn]*convAcc{},
		producers: map[*track.Producer]*prodAcc{}, consumers: map[consKey]*consAcc{}, consRefs: map[*track.Consumer]*consRef{},
		problems: map[string]*ProblemRow{},
	}
}

type cmdType = pulsarapi.BaseCommand_Type

// Per-frame lookups are keyed by small structs of the entity's strings:
// no string is built per frame.
type consKey struct{ topic, subscription, name string }

// Latencies are kept in blocks (chunked.List): one per SEND of a long
// capture, never copied to a bigger array while they are gathered.
type srtAcc struct {
	lat        chunked.List[time.Duration]
	unanswered int
}

type convAcc struct {
	row ConversationRow
	// producers and consumers are the distinct ids seen on the
	// connection: a PRODUCER or SUBSCRIBE retried under the same id (after
	// an error) is the same producer or consumer.
	producers   map[uint64]bool
	consumers   map[uint64]bool
	topics      map[string]bool
	first, last time.Time
}

type prodAcc struct {
	p   *track.Producer
	row ProducerRow
	lat chunked.List[time.Duration]
	cmp map[string]bool
	// lastCmp is the compression last added to cmp (valid when hasCmp).
	lastCmp pulsarapi.CompressionType
	hasCmp  bool
	// marked says the producer and its topic (as it was then) were put in
	// the sets of conversation markedConv: they are again only when the
	// topic changed.
	markedConv  *convAcc
	markedTopic string
}

type consAcc struct{ row ConsumerRow }

// consRef is a consumer entity's row: acc, found by the key (topic,
// subscription, name) the entity had then, and the conversation whose
// sets hold that key (nil until marked).
type consRef struct {
	topic, subscription, name string
	acc                       *consAcc
	markedConv                *convAcc
}

// Frame aggregates one frame.
func (c *Collector) Frame(f *decode.Frame, info *track.Info) {
	t := f.Type
	cnt := c.count(t)
	cnt.Frames[f.Dir]++
	cnt.Bytes += int64(f.Size)
	for _, p := range f.Problems {
		c.problem(p.Code, f.N)
	}
	cv := c.conv(f.Conn)
	cv.row.Frames++
	cv.row.Bytes += int64(f.Size)
	// Capture timestamps can go backwards: keep the earliest and latest.
	if cv.first.IsZero() || f.Time.Before(cv.first) {
		cv.first = f.Time
	}
	cv.last = maxTime(cv.last, f.Time)
	if info == nil {
		return
	}
	for _, p := range info.Problems {
		c.problem(p.Code, f.N)
		if p.Code == track.CodeUnanswered { // on the request itself (two passes)
			c.srtOf(t).unanswered++
		}
	}
	if s := info.Session; s != nil {
		cv.row.ClientVersion, cv.row.ServerVersion = s.ClientVersion, s.ServerVersion
		cv.row.ClientProtocol, cv.row.ServerProtocol = s.ClientProtocol, s.ServerProtocol
	}
	if r := info.Request; r != nil && f.Dir == reassembly.ServerToClient || r != nil && r.Type == pulsarapi.BaseCommand_PING {
		a := c.srtOf(r.Type)
		a.lat.Push(r.Latency)
	}
	if p := info.Producer; p != nil {
		c.producer(f, info, p, cv)
	}
	if cs := info.Consumer; cs != nil {
		c.consumer(f, info, cs, cv)
	}
}

// count returns the Count of command type t.
func (c *Collector) count(t cmdType) *Count {
	if uint32(t) < maxType {
		cnt := c.counts[t]
		if cnt == nil {
			cnt = &Count{Type: t.String()}
			c.counts[t] = cnt
		}
		return cnt
	}
	cnt := c.countsX[t]
	if cnt == nil {
		if c.countsX == nil {
			c.countsX = map[cmdType]*Count{}
		}
		cnt = &Count{Type: t.String()}
		c.countsX[t] = cnt
	}
	return cnt
}

// producer counts a frame of producer p in its row and puts p's key and
// topic in the sets of conversation cv.
func (c *Collector) producer(f *decode.Frame, info *track.Info, p *track.Producer, cv *convAcc) {
	a := c.lastPA
	if p != c.lastP {
		a = c.producers[p]
		if a == nil {
			a = &prodAcc{p: p, row: ProducerRow{Topic: p.Topic}, cmp: map[string]bool{}}
			c.producers[p] = a
			c.prodOrder = append(c.prodOrder, a)
		}
		c.lastP, c.lastPA = p, a
	}
	if a.markedConv != cv || a.markedTopic != p.Topic {
		cv.producers[p.ID] = true
		cv.topics[p.Topic] = true
		a.markedConv, a.markedTopic = cv, p.Topic
	}
	switch f.Type {
	case pulsarapi.BaseCommand_SEND:
		a.row.Sends++
		a.row.Messages += int64(info.Entries)
		a.row.Bytes += int64(len(f.Payload))
		if f.Metadata != nil {
			if f.Metadata.NumMessagesInBatch != nil {
				a.row.Batches++
			}
			if cmp := f.Metadata.GetCompression(); !a.hasCmp || cmp != a.lastCmp {
				a.cmp[cmp.String()] = true
				a.lastCmp, a.hasCmp = cmp, true
			}
		}
	case pulsarapi.BaseCommand_SEND_RECEIPT:
		a.row.Receipts++
		if info.Request != nil {
			a.lat.Push(info.Request.Latency)
		}
	case pulsarapi.BaseCommand_SEND_ERROR:
		a.row.Errors++
	}
}

// consumer counts a frame of consumer cs in the row of its key (topic,
// subscription, name) and puts the key and the topic in the sets of
// conversation cv.
func (c *Collector) consumer(f *decode.Frame, info *track.Info, cs *track.Consumer, cv *convAcc) {
	r := c.lastCR
	if cs != c.lastCS {
		r = c.consRefs[cs]
		if r == nil {
			r = &consRef{}
			c.consRefs[cs] = r
		}
		c.lastCS, c.lastCR = cs, r
	}
	if r.acc == nil || r.topic != cs.Topic || r.subscription != cs.Subscription || r.name != cs.Name {
		key := consKey{cs.Topic, cs.Subscription, cs.Name}
		a := c.consumers[key]
		if a == nil {
			a = &consAcc{row: ConsumerRow{Topic: cs.Topic, Subscription: cs.Subscription, Name: cs.Name, SubType: cs.SubType}}
			c.consumers[key] = a
			c.consOrder = append(c.consOrder, a)
		}
		r.topic, r.subscription, r.name, r.acc, r.markedConv = cs.Topic, cs.Subscription, cs.Name, a, nil
	}
	if r.markedConv != cv {
		cv.consumers[cs.ID] = true
		cv.topics[r.topic] = true
		r.markedConv = cv
	}
	a := r.acc
	switch f.Type {
	case pulsarapi.BaseCommand_FLOW:
		a.row.Permits += int64(f.Command.GetFlow().GetMessagePermits())
	case pulsarapi.BaseCommand_MESSAGE:
		a.row.MessageFrames++
		a.row.Messages += int64(info.Entries)
		if info.RedeliveryOf > 0 || f.Command.GetMessage().GetRedeliveryCount() > 0 {
			a.row.Redelivered++
		}
	case pulsarapi.BaseCommand_ACK:
		a.row.Acks++
		a.row.AckedMessages += int64(len(info.Acks))
	case pulsarapi.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES:
		a.row.RedeliverRequests++
	}
}

// Event aggregates a stream event (problems and, on close, accounting).
func (c *Collector) Event(e *decode.Event) {
	for _, p := range e.Problems {
		r := c.problem(p.Code, 0)
		if len(r.FirstStreams) < maxFirstFrames && e.Conn != nil {
			r.FirstStreams = append(r.FirstStreams, StreamPos{Conn: e.Conn.ID, Dir: e.Dir.String(), Offset: e.Offset})
		}
	}
	if e.Kind == decode.EventClose && e.Stats != nil {
		cv := c.conv(e.Conn)
		if !e.Time.IsZero() {
			cv.last = maxTime(cv.last, e.Time)
		}
		// A connection without frames lasts from its first packet.
		if cv.first.IsZero() || e.Conn.FirstSeen.Before(cv.first) && !e.Conn.FirstSeen.IsZero() {
			cv.first = e.Conn.FirstSeen
		}
		for d, s := range e.Stats {
			payload := e.Conn.Payload[d]
			c.streams = append(c.streams, StreamRow{Conn: e.Conn.ID, Dir: reassembly.Dir(d).String(), Seen: s.Seen,
				InFrames: s.InFrames, Lost: s.Lost, Skipped: s.Skipped, Truncated: s.Truncated, Ignored: s.Ignored,
				TCPPayload: payload, Balanced: s.Balanced() && s.InFrames+s.Lost+s.Skipped+s.Truncated+s.Ignored == payload})
		}
	}
}

// Finding aggregates a conformance finding.
func (c *Collector) Finding(fd *track.Finding) {
	c.problem(fd.Problem.Code, fd.Frame)
	if fd.Problem.Code == track.CodeUnanswered {
		c.srtOf(fd.Type).unanswered++
	}
}

func (c *Collector) problem(code string, n int) *ProblemRow {
	r := c.problems[code]
	if r == nil {
		r = &ProblemRow{Code: code}
		c.problems[code] = r
	}
	r.Count++
	if n > 0 && len(r.FirstFrames) < maxFirstFrames {
		r.FirstFrames = append(r.FirstFrames, n)
	}
	return r
}

func (c *Collector) srtOf(t cmdType) *srtAcc {
	if uint32(t) < maxType {
		a := c.srt[t]
		if a == nil {
			a = &srtAcc{}
			c.srt[t] = a
		}
		return a
	}
	a := c.srtX[t]
	if a == nil {
		if c.srtX == nil {
			c.srtX = map[cmdType]*srtAcc{}
		}
		a = &srtAcc{}
		c.srtX[t] = a
	}
	return a
}

// conv returns the conversation of rc. Conversations are never forgotten:
// the one of the previous frame is remembered.
func (c *Collector) conv(rc *reassembly.Conn) *convAcc {
	if rc == c.lastRC && c.lastConv != nil {
		return c.lastConv
	}
	cv := c.convs[rc]
	if cv == nil {
		cv = &convAcc{row: ConversationRow{Conn: rc.ID, Client: rc.Client.String(), Server: rc.Server.String(), ClientProtocol: -1, ServerProtocol: -1},
			producers: map[uint64]bool{}, consumers: map[uint64]bool{}, topics: map[string]bool{}}
		c.convs[rc] = cv
		c.convOrder = append(c.convOrder, cv)
	}
	c.lastRC, c.lastConv = rc, cv
	return cv
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
