package stats

import (
	"math"
	"math/rand"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// TestCollectorEntityChanges checks that what the Collector remembers of
// the previous frames (conversation, entity, key and compression marked)
// never hides a change: an entity renamed or moved to another topic, two
// entities interleaved, one entity seen on two conversations, compression
// changing back and forth, command types beyond the schema's range.
func TestCollectorEntityChanges(t *testing.T) {
	rc1 := &reassembly.Conn{ID: 1, Client: netip.MustParseAddrPort("10.0.0.1:1000"), Server: netip.MustParseAddrPort("10.0.0.9:6650")}
	rc2 := &reassembly.Conn{ID: 2, Client: netip.MustParseAddrPort("10.0.0.2:1000"), Server: netip.MustParseAddrPort("10.0.0.9:6650")}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New()
	n := 0
	frame := func(rc *reassembly.Conn, typ pulsarapi.BaseCommand_Type, info *track.Info, md *pulsarapi.MessageMetadata) {
		n++
		f := &decode.Frame{N: n, Time: t0.Add(time.Duration(n) * time.Millisecond), Conn: rc, Type: typ, Size: 10, Metadata: md}
		if typ == pulsarapi.BaseCommand_SEND_RECEIPT || typ == pulsarapi.BaseCommand_PONG {
			f.Dir = reassembly.ServerToClient
		}
		c.Frame(f, info)
	}
	comp := func(ct pulsarapi.CompressionType) *pulsarapi.MessageMetadata {
		return &pulsarapi.MessageMetadata{Compression: &ct}
	}
	send := pulsarapi.BaseCommand_SEND

	// Producer p1 is unnamed, then named (PRODUCER_SUCCESS), then renamed;
	// p2 interleaves with it; compression goes NONE, LZ4, NONE, ZSTD.
	p1 := &track.Producer{Conn: rc1, ID: 1, Topic: "t1"}
	p2 := &track.Producer{Conn: rc1, ID: 2, Topic: "t2", Name: "p2"}
	frame(rc1, send, &track.Info{Producer: p1, Entries: 1}, comp(pulsarapi.CompressionType_NONE))
	frame(rc1, send, &track.Info{Producer: p2, Entries: 1}, comp(pulsarapi.CompressionType_LZ4))
	p1.Name = "a"
	frame(rc1, send, &track.Info{Producer: p1, Entries: 2}, comp(pulsarapi.CompressionType_LZ4))
	frame(rc1, send, &track.Info{Producer: p1, Entries: 1}, comp(pulsarapi.CompressionType_NONE))
	frame(rc1, pulsarapi.BaseCommand_SEND_RECEIPT, &track.Info{Producer: p1, Request: &track.Link{Type: send, Latency: 3 * time.Microsecond}}, nil)
	frame(rc1, send, &track.Info{Producer: p2, Entries: 1}, comp(pulsarapi.CompressionType_ZSTD))
	// Same name, other topic (an entity changed by a sink would do this).
	p1.Topic = "t1b"
	frame(rc1, send, &track.Info{Producer: p1, Entries: 1}, nil)
	// The same entity on another conversation.
	frame(rc2, send, &track.Info{Producer: p2, Entries: 1}, nil)

	// Consumer c1 renamed; c2 interleaved; c1 seen on conversation 2 too.
	c1 := &track.Consumer{Conn: rc1, ID: 1, Topic: "t3", Subscription: "s", Name: "x", SubType: "Shared"}
	c2 := &track.Consumer{Conn: rc1, ID: 2, Topic: "t3", Subscription: "s", Name: "y", SubType: "Shared"}
	msg := pulsarapi.BaseCommand_MESSAGE
	mcmd := &pulsarapi.BaseCommand{Message: &pulsarapi.CommandMessage{}}
	cframe := func(rc *reassembly.Conn, cs *track.Consumer) {
		n++
		c.Frame(&decode.Frame{N: n, Time: t0.Add(time.Duration(n) * time.Millisecond), Conn: rc, Type: msg, Command: mcmd, Size: 10, Dir: reassembly.ServerToClient},
			&track.Info{Consumer: cs, Entries: 1})
	}
	cframe(rc1, c1)
	cframe(rc1, c2)
	cframe(rc1, c1)
	c1.Name = "z"
	cframe(rc1, c1)
	c1.Subscription = "s2"
	cframe(rc1, c1)
	cframe(rc2, c1)
	cframe(rc1, c2)

	// Types beyond the schema's range, counted and timed.
	frame(rc2, pulsarapi.BaseCommand_Type(1000), &track.Info{}, nil)
	frame(rc2, pulsarapi.BaseCommand_Type(-3), &track.Info{}, nil)
	frame(rc2, pulsarapi.BaseCommand_Type(1000), &track.Info{Request: &track.Link{Type: pulsarapi.BaseCommand_PING, Latency: time.Microsecond}}, nil)
	frame(rc2, pulsarapi.BaseCommand_PONG, &track.Info{Request: &track.Link{Type: pulsarapi.BaseCommand_Type(999), Latency: 2 * time.Microsecond}}, nil)

	r := c.Report()
	convs := map[int]ConversationRow{}
	for _, cv := range r.Conversations {
		convs[cv.Conn] = cv
	}
	// Conversation 1: producers 1 and 2 and consumers 1 and 2, however
	// renamed (a conversation counts distinct ids, issue 16: before, each
	// name a producer had was counted as another producer); every topic
	// they had.
	if cv := convs[1]; cv.Producers != 2 || cv.Consumers != 2 || !reflect.DeepEqual(cv.Topics, []string{"t1", "t1b", "t2", "t3"}) {
		t.Errorf("conversation 1: %d producers, %d consumers, topics %q; want 2, 2, [t1 t1b t2 t3]", cv.Producers, cv.Consumers, cv.Topics)
	}
	if cv := convs[2]; cv.Producers != 1 || cv.Consumers != 1 || !reflect.DeepEqual(cv.Topics, []string{"t2", "t3"}) {
		t.Errorf("conversation 2: %d producers, %d consumers, topics %q; want 1, 1, [t2 t3]", cv.Producers, cv.Consumers, cv.Topics)
	}
	type prod struct {
		topic, name string
		sends       int64
		messages    int64
		cmp         []string
		receipts    int64
	}
	var prods []prod
	for _, p := range r.Producers {
		prods = append(prods, prod{p.Topic, p.Name, p.Sends, p.Messages, p.Compression, p.Receipts})
	}
	// Producers are merged by their topic and name at the end.
	wantProds := []prod{
		{"t1b", "a", 4, 5, []string{"LZ4", "NONE"}, 1},
		{"t2", "p2", 3, 3, []string{"LZ4", "ZSTD"}, 0},
	}
	if !reflect.DeepEqual(prods, wantProds) {
		t.Errorf("producers\n%+v\nwant\n%+v", prods, wantProds)
	}
	type cons struct {
		topic, sub, name string
		frames           int64
	}
	var conss []cons
	for _, cs := range r.Consumers {
		conss = append(conss, cons{cs.Topic, cs.Subscription, cs.Name, cs.MessageFrames})
	}
	wantCons := []cons{{"t3", "s", "x", 2}, {"t3", "s", "y", 2}, {"t3", "s", "z", 1}, {"t3", "s2", "z", 2}}
	if !reflect.DeepEqual(conss, wantCons) {
		t.Errorf("consumers\n%+v\nwant\n%+v", conss, wantCons)
	}
	counts := map[string][2]int64{}
	for _, cnt := range r.Commands {
		counts[cnt.Type] = [2]int64{cnt.C2S, cnt.S2C}
	}
	wantCounts := map[string][2]int64{"SEND": {7, 0}, "SEND_RECEIPT": {0, 1}, "MESSAGE": {0, 7}, "1000": {2, 0}, "-3": {1, 0}, "PONG": {0, 1}}
	if !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("commands %v, want %v", counts, wantCounts)
	}
	for i := 1; i < len(r.Commands); i++ {
		if r.Commands[i-1].Type >= r.Commands[i].Type {
			t.Errorf("commands not in order: %q before %q", r.Commands[i-1].Type, r.Commands[i].Type)
		}
	}
	srt := map[string]int{}
	for _, s := range r.SRT {
		srt[s.Request] = s.Count
	}
	if want := map[string]int{"SEND": 1, "PING": 1, "999": 1}; !reflect.DeepEqual(srt, want) {
		t.Errorf("service response times %v, want %v", srt, want)
	}
}

// TestPercentiles checks the selection against sorting and reading the
// nearest rank, on shapes of input that trouble selections (sorted,
// reversed, all equal, few values, organ pipes), random ones, and spreads
// that take the radix selection several passes (the whole int64 range,
// rare huge outliers, the extremes), of every small size and some large
// ones, in blocks of random lengths; the durations must not change.
func TestPercentiles(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	shapes := []struct {
		name string
		gen  func(i, n int) time.Duration
	}{
		{"random", func(int, int) time.Duration { return time.Duration(r.Int63n(1 << 40)) }},
		{"sorted", func(i, _ int) time.Duration { return time.Duration(i) }},
		{"reversed", func(i, n int) time.Duration { return time.Duration(n - i) }},
		{"equal", func(int, int) time.Duration { return 7 }},
		{"few values", func(int, int) time.Duration { return time.Duration(r.Intn(3)) * time.Millisecond }},
		{"organ pipe", func(i, n int) time.Duration { return time.Duration(min(i, n-i)) }},
		{"negative", func(int, int) time.Duration { return -time.Duration(r.Intn(1000)) }},
		{"whole range", func(int, int) time.Duration { return time.Duration(r.Uint64()) }},
		{"outliers", func(i, _ int) time.Duration {
			if i%97 == 3 {
				return time.Duration(r.Int63n(1 << 60))
			}
			return time.Duration(140_000 + r.Intn(5_000_000))
		}},
		{"extremes", func(i, _ int) time.Duration {
			return [...]time.Duration{math.MinInt64, math.MaxInt64, 0, -999, 999, 1000, -1000}[i%7]
		}},
	}
	sizes := []int{1, 2, 3, 5, 10, 31, 32, 33, 64, 99, 100, 101, 1000, 4097, 100000}
	var hist []uint32 // reused from one call to the next, as runPercentiles does
	for _, sh := range shapes {
		for _, n := range sizes {
			d := make([]time.Duration, n)
			for i := range d {
				d[i] = sh.gen(i, n)
			}
			orig := slices.Clone(d)
			sorted := slices.Clone(d)
			slices.Sort(sorted)
			want := [5]int64{sorted[0].Microseconds(), pct(sorted, 50), pct(sorted, 90), pct(sorted, 99), sorted[n-1].Microseconds()}
			// In blocks of random lengths (some empty), as a
			// chunked.List holds them.
			var blocks [][]time.Duration
			for rest := d; len(rest) > 0; {
				k := min(r.Intn(2*n/3+2), len(rest))
				blocks, rest = append(blocks, rest[:k]), rest[k:]
			}
			q, p50, p90, p99 := percentiles(blocks, &hist)
			if got := [5]int64{q.min, p50, p90, p99, q.max}; got != want {
				t.Errorf("%s, %d values in %d blocks: min p50 p90 p99 max %v, want %v", sh.name, n, len(blocks), got, want)
			}
			if !slices.Equal(d, orig) {
				t.Errorf("%s, %d values: the durations changed", sh.name, n)
			}
		}
	}
}

// pct is the nearest-rank percentile of sorted durations, in microseconds
// (the reference percentiles is checked against).
func pct(d []time.Duration, p int) int64 {
	i := (p*len(d) + 99) / 100
	if i < 1 {
		i = 1
	}
	return d[i-1].Microseconds()
}
