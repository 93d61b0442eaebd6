package stats

import (
	"math"
	"math/bits"
	"sort"
	"strconv"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/secret"

	"github.com/pulsarscope/pulsarscope/internal/chunked"
)

// Report is the result of a stats run (the -o json document).
type Report struct {
	Capture       []CaptureRow      `json:"capture"`
	Commands      []Count           `json:"commands"`
	SRT           []SRTRow          `json:"service_response_time"`
	Conversations []ConversationRow `json:"conversations"`
	Producers     []ProducerRow     `json:"producers"`
	Consumers     []ConsumerRow     `json:"consumers"`
	Problems      []ProblemRow      `json:"problems"`
	Streams       []StreamRow       `json:"streams"`
	// PayloadsChecked says payloads were decompressed and batches split,
	// so that Problems counts what only that finds (batch-count-mismatch,
	// decompression-failed, ...). Set by the caller, not the Collector.
	PayloadsChecked bool `json:"payloads_checked"`
}

// CaptureRow is the capture counters of one interface of one input: a
// pcapng file's Interface Statistics Block, or a live capture's kernel
// counters. A nil field was not recorded (JSON null).
type CaptureRow struct {
	// Input names the input: the file as given ("stdin" for -), or "live".
	Input string `json:"input"`
	// Index is the pcapng interface number, Interface its name ("" when
	// the file names none).
	Index     int    `json:"index"`
	Interface string `json:"interface"`
	// Received is the number of packets received (isb_ifrecv), Dropped the
	// number the kernel or its capture buffer dropped (isb_ifdrop).
	Received *uint64 `json:"received"`
	Dropped  *uint64 `json:"dropped"`
	// Start and End bound the span the counters cover (isb_starttime,
	// isb_endtime); SpanUS is End - Start in microseconds.
	Start  *time.Time `json:"start"`
	End    *time.Time `json:"end"`
	SpanUS *int64     `json:"span_us"`
}

// Count is the frames of one command type, by direction.
type Count struct {
	Type   string   `json:"type"`
	Frames [2]int64 `json:"-"`
	C2S    int64    `json:"c2s"`
	S2C    int64    `json:"s2c"`
	Bytes  int64    `json:"bytes"`
}

// SRTRow is the service response time of one request type, in microseconds.
type SRTRow struct {
	Request    string `json:"request"`
	Count      int    `json:"count"`
	MinUS      int64  `json:"min_us"`
	P50US      int64  `json:"p50_us"`
	P90US      int64  `json:"p90_us"`
	P99US      int64  `json:"p99_us"`
	MaxUS      int64  `json:"max_us"`
	Unanswered int    `json:"unanswered"`
}

// ConversationRow is one connection.
type ConversationRow struct {
	Conn           int      `json:"conn"`
	Client         string   `json:"client"`
	Server         string   `json:"server"`
	ClientVersion  string   `json:"client_version"`
	ServerVersion  string   `json:"server_version"`
	ClientProtocol int32    `json:"client_protocol"`
	ServerProtocol int32    `json:"server_protocol"`
	Producers      int      `json:"producers"`
	Consumers      int      `json:"consumers"`
	Topics         []string `json:"topics"`
	Frames         int64    `json:"frames"`
	Bytes          int64    `json:"bytes"`
	DurationUS     int64    `json:"duration_us"`
}

// ProducerRow is one producer (by topic and name, across reconnects).
type ProducerRow struct {
	Topic       string   `json:"topic"`
	Name        string   `json:"name"`
	Sends       int64    `json:"sends"`
	Messages    int64    `json:"messages"`
	Batches     int64    `json:"batches"`
	Bytes       int64    `json:"bytes"`
	Compression []string `json:"compression"`
	Receipts    int64    `json:"receipts"`
	Errors      int64    `json:"errors"`
	// Latencies is how many publish latencies (SEND paired with its
	// receipt) the percentiles are of; with none they are 0 in JSON and
	// "-" in the tables.
	Latencies int   `json:"publish_latencies"`
	P50US     int64 `json:"publish_p50_us"`
	P90US     int64 `json:"publish_p90_us"`
	P99US     int64 `json:"publish_p99_us"`
}

// ConsumerRow is one consumer (by topic, subscription and name).
type ConsumerRow struct {
	Topic             string `json:"topic"`
	Subscription      string `json:"subscription"`
	Name              string `json:"name"`
	SubType           string `json:"sub_type"`
	Permits           int64  `json:"permits"`
	MessageFrames     int64  `json:"message_frames"`
	Messages          int64  `json:"messages"`
	Acks              int64  `json:"acks"`
	AckedMessages     int64  `json:"acked_message_frames"`
	Redelivered       int64  `json:"redelivered"`
	RedeliverRequests int64  `json:"redeliver_requests"`
}

// ProblemRow is one problem code with its first frames.
type ProblemRow struct {
	Code        string `json:"code"`
	Count       int    `json:"count"`
	FirstFrames []int  `json:"first_frames"`
	// FirstStreams are where the first stream problems of this code (on
	// events, not frames: a gap, skipped or truncated bytes) lie.
	FirstStreams []StreamPos `json:"first_streams,omitempty"`
}

// StreamPos is a place in a connection's stream.
type StreamPos struct {
	Conn   int    `json:"conn"`
	Dir    string `json:"dir"`
	Offset int64  `json:"offset"`
}

// String writes the place as the text tables show it: #1 c2s @1653.
func (p StreamPos) String() string {
	return "#" + strconv.Itoa(p.Conn) + " " + p.Dir + " @" + strconv.FormatInt(p.Offset, 10)
}

// StreamRow is the byte accounting of one stream.
type StreamRow struct {
	Conn      int    `json:"conn"`
	Dir       string `json:"dir"`
	Seen      int64  `json:"seen"`
	InFrames  int64  `json:"in_frames"`
	Lost      int64  `json:"lost"`
	Skipped   int64  `json:"skipped"`
	Truncated int64  `json:"truncated"`
	Ignored   int64  `json:"ignored"`
	// TCPPayload is the reassembler's own count of the stream's TCP
	// payload bytes (reassembly.Conn.Payload); Balanced says whether
	// in_frames + lost + skipped + truncated + ignored equals it.
	TCPPayload int64 `json:"tcp_payload"`
	Balanced   bool  `json:"balanced"`
}

// Report builds the tables from what was collected.
func (c *Collector) Report() *Report {
	r := &Report{Capture: append([]CaptureRow{}, c.capture...), Commands: []Count{}, SRT: []SRTRow{}, Conversations: []ConversationRow{}, Producers: []ProducerRow{},
		Consumers: []ConsumerRow{}, Problems: []ProblemRow{}, Streams: append([]StreamRow{}, c.streams...)}
	// Types are listed by name (each type has its own), so the order they
	// are collected in does not matter.
	addCount := func(cnt *Count) {
		cnt.C2S, cnt.S2C = cnt.Frames[0], cnt.Frames[1]
		r.Commands = append(r.Commands, *cnt)
	}
	for _, cnt := range c.counts {
		if cnt != nil {
			addCount(cnt)
		}
	}
	for _, cnt := range c.countsX {
		addCount(cnt)
	}
	sort.Slice(r.Commands, func(i, j int) bool { return r.Commands[i].Type < r.Commands[j].Type })
	var blocks [][]time.Duration // scratch of percentiles
	var hist []uint32
	addSRT := func(t cmdType, a *srtAcc) {
		row := SRTRow{Request: t.String(), Count: a.lat.Len(), Unanswered: a.unanswered}
		if a.lat.Len() > 0 {
			var q quantiles
			blocks = a.lat.Blocks(blocks[:0])
			q, row.P50US, row.P90US, row.P99US = percentiles(blocks, &hist)
			row.MinUS, row.MaxUS = q.min, q.max
		}
		r.SRT = append(r.SRT, row)
	}
	for t, a := range c.srt {
		if a != nil {
			addSRT(cmdType(t), a)
		}
	}
	for t, a := range c.srtX {
		addSRT(t, a)
	}
	sort.Slice(r.SRT, func(i, j int) bool { return r.SRT[i].Request < r.SRT[j].Request })
	for _, cv := range c.convOrder {
		row := cv.row
		row.Producers, row.Consumers, row.Topics = len(cv.producers), len(cv.consumers), sortedKeys(cv.topics)
		if !cv.first.IsZero() && cv.last.After(cv.first) {
			row.DurationUS = cv.last.Sub(cv.first).Microseconds()
		}
		r.Conversations = append(r.Conversations, row)
	}
	// Producers are merged by topic and name across reconnects (the name
	// is known once PRODUCER_SUCCESS named the entity).
	merged := map[string]*prodAcc{}
	var order []*prodAcc
	lat := map[*prodAcc][]*chunked.List[time.Duration]{}
	for _, a := range c.prodOrder {
		key := a.p.Topic + "\x00" + a.p.Name
		m := merged[key]
		if m == nil {
			m = &prodAcc{row: ProducerRow{Topic: a.p.Topic, Name: a.p.Name}, cmp: map[string]bool{}}
			merged[key] = m
			order = append(order, m)
		}
		m.row.Sends += a.row.Sends
		m.row.Messages += a.row.Messages
		m.row.Batches += a.row.Batches
		m.row.Bytes += a.row.Bytes
		m.row.Receipts += a.row.Receipts
		m.row.Errors += a.row.Errors
		lat[m] = append(lat[m], &a.lat)
		for k := range a.cmp {
			m.cmp[k] = true
		}
	}
	for _, a := range order {
		row := a.row
		row.Compression = sortedKeys(a.cmp)
		blocks = blocks[:0]
		n := 0
		for _, l := range lat[a] {
			blocks, n = l.Blocks(blocks), n+l.Len()
		}
		if n > 0 {
			_, row.P50US, row.P90US, row.P99US = percentiles(blocks, &hist)
		}
		row.Latencies = n
		r.Producers = append(r.Producers, row)
	}
	for _, a := range c.consOrder {
		r.Consumers = append(r.Consumers, a.row)
	}
	for _, p := range c.problems {
		r.Problems = append(r.Problems, *p)
	}
	sort.Slice(r.Problems, func(i, j int) bool { return r.Problems[i].Code < r.Problems[j].Code })
	return r
}

// quantiles are the smallest and largest of some durations, in
// microseconds.
type quantiles struct{ min, max int64 }

// percentiles returns the extremes and the nearest-rank 50th, 90th and
// 99th percentiles, in microseconds, of the durations in blocks (not all
// empty): what sorting them and reading pct would give. They are found by
// counting (selectUS), read where they lie: a latency per SEND, millions
// in a big capture, is neither copied nor reordered. hist is scratch.
func percentiles(blocks [][]time.Duration, hist *[]uint32) (q quantiles, p50, p90, p99 int64) {
	n := 0
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, b := range blocks {
		for _, d := range b {
			v := d.Microseconds()
			lo, hi = min(lo, v), max(hi, v)
		}
		n += len(b)
	}
	q = quantiles{lo, hi}
	return q, selectUS(blocks, rank(n, 50), lo, hi, hist), selectUS(blocks, rank(n, 90), lo, hi, hist), selectUS(blocks, rank(n, 99), lo, hi, hist)
}

// selectUS returns the k-th smallest (from 0) of the durations of blocks
// in microseconds, all of which lie in [lo, hi]: a radix selection, a
// pass over them for every 16 bits of the spread that the values of the
// k-th one's bucket still span (one or two for latencies). The
// microseconds of the k-th smallest duration are the k-th smallest
// microseconds: truncating to microseconds keeps the order.
func selectUS(blocks [][]time.Duration, k int, lo, hi int64, hist *[]uint32) int64 {
	for lo < hi {
		span := uint64(hi) - uint64(lo)
		shift := max(bits.Len64(span)-16, 0)
		nb := int(span>>shift) + 1
		if cap(*hist) < nb {
			*hist = make([]uint32, nb)
		}
		h := (*hist)[:nb]
		clear(h)
		for _, b := range blocks {
			for _, d := range b {
				if v := d.Microseconds(); v >= lo && v <= hi {
					h[(uint64(v)-uint64(lo))>>shift]++
				}
			}
		}
		found := false
		for i, c := range h {
			if k < int(c) {
				start := uint64(lo) + uint64(i)<<shift
				lo, hi = int64(start), int64(start+min(1<<shift-1, uint64(hi)-start))
				found = true
				break
			}
			k -= int(c)
		}
		if !found {
			return hi // k beyond the values: never, but never a loop either
		}
	}
	return lo
}

// rank is the index, in sorted order, of the nearest-rank p-th percentile
// of n values.
func rank(n, p int) int {
	return max((p*n+99)/100, 1) - 1
}

// RedactSecrets replaces the credentials by shape (decode/secret) in every
// string of the report that came from the wire: versions, topics, names,
// subscriptions. The report holds no secret field's value.
func (r *Report) RedactSecrets() {
	for i := range r.Conversations {
		c := &r.Conversations[i]
		c.ClientVersion, c.ServerVersion = secret.Scrub(c.ClientVersion), secret.Scrub(c.ServerVersion)
		for j := range c.Topics {
			c.Topics[j] = secret.Scrub(c.Topics[j])
		}
	}
	for i := range r.Producers {
		p := &r.Producers[i]
		p.Topic, p.Name = secret.Scrub(p.Topic), secret.Scrub(p.Name)
	}
	for i := range r.Consumers {
		c := &r.Consumers[i]
		c.Topic, c.Subscription, c.Name = secret.Scrub(c.Topic), secret.Scrub(c.Subscription), secret.Scrub(c.Name)
	}
}
