package diff

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// transcripts caches the transcripts of test captures under default rules.
type transcripts struct {
	mu sync.Mutex
	m  map[string]*Transcript
}

func (c *transcripts) get(t *testing.T, path string) *Transcript {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*Transcript{}
	}
	if tr := c.m[path]; tr != nil {
		return tr
	}
	tr, err := Load(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	c.m[path] = tr
	return tr
}

func testdata(name string) string {
	if name == "basic.pcap" {
		return filepath.Join("..", "testdata", "pcaps", name)
	}
	return filepath.Join("..", "testdata", "diff", name)
}

// TestSameScenario: two captures of the same scenario made at different
// times (other ports, times, ids, PING counts, ack grouping, pipelining and
// response order) are the same.
func TestSameScenario(t *testing.T) {
	pairs := []struct{ a, b string }{
		{"basic.pcap", "basic-b.pcap"},
		{"../pcaps/many.pcap", "many-b.pcap"},
		{"../pcaps/batching-compression.pcap", "batching-compression-b.pcap"},
		{"../pcaps/partitioned.pcap", "partitioned-b.pcap"},
		// Its GET_LAST_MESSAGE_ID_RESPONSE has the mark-delete position
		// 'before the first entry of the ledger' where the other has an
		// entry: the acks reached the broker later.
		{"../pcaps/subscriptions.pcap", "subscriptions-b.pcap"},
	}
	var c transcripts
	for _, p := range pairs {
		for _, o := range []Options{{}, {LatencyThreshold: 0.5}, {IgnoreOrder: true}} {
			res, err := Compare(c.get(t, testdata(p.a)), c.get(t, testdata(p.b)), o)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Same() {
				var buf bytes.Buffer
				res.WriteText(&buf, TextOptions{})
				t.Errorf("%s vs %s, options %+v: differ:\n%s", p.a, p.b, o, buf.String())
			}
		}
	}
}

// TestOneDifference: lab captures that differ from basic in one way are
// reported different, naming exactly that difference.
func TestOneDifference(t *testing.T) {
	tests := []struct {
		file string
		opts Options
		// want is the summary; fields, added, outcomes and problems the
		// exact field changes (stream key: "TYPE path"), added commands
		// ("stream key: TYPE"), outcome and problem diffs; regressions the
		// request types whose latency regressed.
		want        Summary
		fields      []string
		added       []string
		outcomes    []string
		problems    []string
		regressions []string
	}{
		{
			file: "basic-batching.pcap",
			want: Summary{Changed: 20},
			fields: []string{
				"consumer persistent://public/default/basic sub=basic-sub #1: MESSAGE entries",
				"consumer persistent://public/default/basic sub=basic-sub #1: MESSAGE metadata.num_messages_in_batch",
				"consumer persistent://public/default/basic sub=basic-sub #1: MESSAGE metadata.uncompressed_size",
				"consumer persistent://public/default/basic sub=basic-sub #1: MESSAGE payload.crc32c",
				"consumer persistent://public/default/basic sub=basic-sub #1: MESSAGE payload.size",
				"consumer persistent://public/default/basic sub=basic-sub #1: MESSAGE payload.uncompressed_size",
				"producer persistent://public/default/basic #1: SEND entries",
				"producer persistent://public/default/basic #1: SEND metadata.num_messages_in_batch",
				"producer persistent://public/default/basic #1: SEND metadata.uncompressed_size",
				"producer persistent://public/default/basic #1: SEND num_messages",
				"producer persistent://public/default/basic #1: SEND payload.crc32c",
				"producer persistent://public/default/basic #1: SEND payload.size",
				"producer persistent://public/default/basic #1: SEND payload.uncompressed_size",
			},
		},
		{
			file: "basic-lz4.pcap",
			want: Summary{Changed: 20},
			fields: []string{
				"consumer persistent://public/default/basic sub=basic-sub #1: MESSAGE metadata.compression",
				"consumer persistent://public/default/basic sub=basic-sub #1: MESSAGE payload.size",
				"producer persistent://public/default/basic #1: SEND metadata.compression",
				"producer persistent://public/default/basic #1: SEND payload.size",
			},
		},
		{
			file: "basic-extra.pcap",
			want: Summary{Added: 2, OutcomesChanged: 1},
			added: []string{
				"consumer persistent://public/default/basic sub=basic-sub #1: GET_LAST_MESSAGE_ID",
				"consumer persistent://public/default/basic sub=basic-sub #1: GET_LAST_MESSAGE_ID_RESPONSE",
			},
			outcomes: []string{"GET_LAST_MESSAGE_ID -> GET_LAST_MESSAGE_ID_RESPONSE 0->1"},
		},
		{
			// The client creates the producer again after the ERROR: one
			// more PARTITIONED_METADATA and LOOKUP, and PRODUCER.
			file: "basic-producer-error.pcap",
			want: Summary{Added: 6, OutcomesChanged: 3, NewProblems: 1},
			added: []string{
				"lookup persistent://public/default/basic #1: PARTITIONED_METADATA",
				"lookup persistent://public/default/basic #1: PARTITIONED_METADATA_RESPONSE",
				"lookup persistent://public/default/basic #1: LOOKUP",
				"lookup persistent://public/default/basic #1: LOOKUP_RESPONSE",
				"producer persistent://public/default/basic #1: ERROR",
				"producer persistent://public/default/basic #1: PRODUCER",
			},
			outcomes: []string{
				"LOOKUP -> LOOKUP_RESPONSE 2->3",
				"PARTITIONED_METADATA -> PARTITIONED_METADATA_RESPONSE 3->4",
				"PRODUCER -> ERROR ServiceNotReady 0->1",
			},
			problems: []string{"error-response 0->1"},
		},
	}
	var c transcripts
	base := c.get(t, testdata("basic.pcap"))
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := Compare(base, c.get(t, testdata(tt.file)), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			res.WriteText(&buf, TextOptions{})
			if res.Same() {
				t.Fatalf("reported the same:\n%s", buf.String())
			}
			if res.Summary != tt.want {
				t.Errorf("summary = %+v, want %+v\n%s", res.Summary, tt.want, buf.String())
			}
			var fields, added, outcomes, problems, regs []string
			for _, s := range res.Streams {
				for _, f := range s.Fields {
					fields = append(fields, s.Key+": "+f.Type+" "+f.Path)
				}
				for _, h := range s.Hunks {
					for _, l := range h.Lines {
						if l.Op == "+" {
							added = append(added, s.Key+": "+l.Command.Type)
						}
					}
				}
			}
			for _, o := range res.Outcomes {
				outcomes = append(outcomes, countString(o))
			}
			for _, p := range res.Problems {
				problems = append(problems, countString(p))
			}
			for _, l := range res.Latency {
				if l.Regression {
					regs = append(regs, l.Type)
				}
			}
			check := func(what string, got, want []string) {
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s:\n got %q\nwant %q\n%s", what, got, want, buf.String())
				}
			}
			if tt.want.Added == 0 {
				added = nil // changed lines also show as "+"
			}
			check("field changes", fields, tt.fields)
			check("added commands", added, tt.added)
			check("outcomes", outcomes, tt.outcomes)
			check("problems", problems, tt.problems)
			check("latency regressions", regs, tt.regressions)
		})
	}
}

func countString(d CountDiff) string {
	return d.Key + " " + strconv.Itoa(d.Baseline) + "->" + strconv.Itoa(d.Candidate)
}

// TestLatencyNeedsThreshold: latency is only compared when asked to.
func TestLatencyNeedsThreshold(t *testing.T) {
	var c transcripts
	res, err := Compare(c.get(t, testdata("../pcaps/many.pcap")), c.get(t, testdata("many-slow-producer.pcap")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Same() {
		t.Errorf("a slower broker differs without --latency-threshold: %+v", res.Summary)
	}
}

// TestLatencySignificance: a latency regression needs 20 requests on each
// side and a significant Mann-Whitney U test. The broker that holds its 20
// PRODUCER_SUCCESS back 20 ms is reported, on PRODUCER alone; the one that
// holds its 2 LOOKUP answers back 50 ms is noted "not enough samples", not
// a regression; and second runs of unchanged scenarios have no regression.
func TestLatencySignificance(t *testing.T) {
	var c transcripts
	opts := Options{LatencyThreshold: 0.5}
	res, err := Compare(c.get(t, testdata("../pcaps/many.pcap")), c.get(t, testdata("many-slow-producer.pcap")), opts)
	if err != nil {
		t.Fatal(err)
	}
	var regs []string
	for _, l := range res.Latency {
		if l.Regression {
			regs = append(regs, l.Type)
			if l.PValue <= 0 || l.PValue >= LatencyAlpha || l.Baseline.Count < 20 || len(l.Candidate.Samples) < 20 {
				t.Errorf("%s: p %g, %d and %d samples", l.Type, l.PValue, len(l.Baseline.Samples), len(l.Candidate.Samples))
			}
		}
	}
	if strings.Join(regs, ",") != "PRODUCER" || res.Summary.LatencyRegressions != 1 {
		t.Errorf("many-slow-producer: regressions %v (%d)", regs, res.Summary.LatencyRegressions)
	}

	res, err = Compare(c.get(t, testdata("basic.pcap")), c.get(t, testdata("basic-slow-lookup.pcap")), opts)
	if err != nil {
		t.Fatal(err)
	}
	noted := false
	for _, l := range res.Latency {
		if l.Type == "LOOKUP" {
			noted = !l.Regression && strings.HasPrefix(l.Note, "not enough samples: 2 and 2 requests")
		}
	}
	if !res.Same() || !noted {
		t.Errorf("basic-slow-lookup: same %v, latency %+v", res.Same(), res.Latency)
	}

	for _, p := range [][2]string{
		{"basic.pcap", "basic-b.pcap"},
		{"../pcaps/many.pcap", "many-b.pcap"},
		{"../pcaps/batching-compression.pcap", "batching-compression-b.pcap"},
		{"../pcaps/partitioned.pcap", "partitioned-b.pcap"},
	} {
		res, err := Compare(c.get(t, testdata(p[0])), c.get(t, testdata(p[1])), Options{LatencyThreshold: 0.1, LatencyMin: time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.LatencyRegressions != 0 {
			t.Errorf("%s vs %s (unchanged): %d latency regressions: %+v", p[0], p[1], res.Summary.LatencyRegressions, res.Latency)
		}
	}
}
