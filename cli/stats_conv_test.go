package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatsConversationEntities: on every committed capture, each
// conversation's producers and consumers are the distinct producer and
// consumer ids of its PRODUCER and SUBSCRIBE commands, counted from the
// frames 'read -o json' decodes (not from the stats collector).
func TestStatsConversationEntities(t *testing.T) {
	files := shippedCaptures(t)
	n := 0
	for _, f := range files {
		n++
		out, errOut, code := run(t, "read", "-o", "json", "--port", "16650", f)
		if code != ExitOK && code != ExitProblems {
			t.Fatalf("%s: read: exit %d: %s", f, code, errOut)
		}
		want := map[int][2]map[string]bool{}
		for _, line := range ndjsonLines(out) {
			var fr struct {
				Conn    int    `json:"conn"`
				Type    string `json:"type"`
				Command struct {
					ProducerID string `json:"producer_id"`
					ConsumerID string `json:"consumer_id"`
				} `json:"command"`
			}
			if json.Unmarshal(line, &fr) != nil || (fr.Type != "PRODUCER" && fr.Type != "SUBSCRIBE") {
				continue
			}
			w, ok := want[fr.Conn]
			if !ok {
				w = [2]map[string]bool{{}, {}}
				want[fr.Conn] = w
			}
			if fr.Type == "PRODUCER" {
				w[0][fr.Command.ProducerID] = true
			} else {
				w[1][fr.Command.ConsumerID] = true
			}
		}
		out, errOut, code = run(t, "stats", "-o", "json", "--port", "16650", f)
		if code != ExitOK {
			t.Fatalf("%s: stats: exit %d: %s", f, code, errOut)
		}
		var rep struct {
			Conversations []struct {
				Conn       int   `json:"conn"`
				Producers  int   `json:"producers"`
				Consumers  int   `json:"consumers"`
				DurationUS int64 `json:"duration_us"`
			} `json:"conversations"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range rep.Conversations {
			w := want[c.Conn]
			if c.Producers != len(w[0]) || c.Consumers != len(w[1]) {
				t.Errorf("%s: conversation #%d: %d producers and %d consumers, want %d and %d (ids of PRODUCER and SUBSCRIBE)",
					filepath.Base(f), c.Conn, c.Producers, c.Consumers, len(w[0]), len(w[1]))
			}
			if c.DurationUS < 0 || c.DurationUS > 3600e6 {
				t.Errorf("%s: conversation #%d lasts %d µs", filepath.Base(f), c.Conn, c.DurationUS)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d captures", n)
	}
}

// TestStatsDurationWithoutFrames: a connection that carries no frame (a
// handshake and a FIN exchange) lasts from its first packet to its close,
// not from the zero time.
func TestStatsDurationWithoutFrames(t *testing.T) {
	v := newConv(40200, 7000)
	v.handshake()
	v.fin()
	name := writeTemp(t, "empty-conn.pcap", writePcap(t, v.recs, 262144))
	out, errOut, code := run(t, "stats", "-o", "json", name)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Conversations []struct {
			DurationUS int64 `json:"duration_us"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// packets a millisecond apart: the SYN at 0, the broker's FIN, which
	// closes the connection, at 4 ms
	if len(rep.Conversations) != 1 || rep.Conversations[0].DurationUS != 4000 {
		t.Fatalf("conversations %+v, want one of 4000 µs", rep.Conversations)
	}
}

// TestStatsStreamProblemsWhere: a stream problem (bytes lost to a dropped
// packet) is listed in stats with the connection, direction and stream
// offset the lab's fault writer logged for the drop.
func TestStatsStreamProblemsWhere(t *testing.T) {
	checked := 0
	for _, exp := range loadExpectations(t) {
		if !strings.HasSuffix(exp.File, "-drop.pcap") {
			continue
		}
		out, errOut, code := run(t, "stats", "-o", "json", "--port", "16650", filepath.Join("../testdata/pcaps", exp.File))
		if code != ExitOK {
			t.Fatalf("%s: exit %d: %s", exp.File, code, errOut)
		}
		var rep struct {
			Problems []struct {
				Code         string `json:"code"`
				FirstStreams []struct {
					Conn   int    `json:"conn"`
					Dir    string `json:"dir"`
					Offset int64  `json:"offset"`
				} `json:"first_streams"`
			} `json:"problems"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		for _, f := range exp.Faults {
			if f.Kind != "drop" {
				continue
			}
			found := false
			for _, pr := range rep.Problems {
				for _, w := range pr.FirstStreams {
					found = found || pr.Code == "bytes-lost" && w.Conn == f.Conn && w.Dir == f.Dir && w.Offset == f.StreamOffset
				}
			}
			if !found {
				t.Errorf("%s: no bytes-lost at #%d %s @%d in %+v", exp.File, f.Conn, f.Dir, f.StreamOffset, rep.Problems)
			}
			checked++
		}
	}
	if checked < 2 {
		t.Fatalf("only %d drops checked", checked)
	}
}

// TestStatsNoSampleIsDash: a percentile of no sample (a producer refused
// before it sent anything, errors.pcap) is "-" in the tables, not 0, and
// its JSON row says it has no latency; producers with latencies show them.
func TestStatsNoSampleIsDash(t *testing.T) {
	f := "../testdata/pcaps/errors.pcap"
	js, _, _ := run(t, "stats", "-o", "json", f)
	var rep struct {
		Producers []struct {
			Topic     string `json:"topic"`
			Latencies int    `json:"publish_latencies"`
			Receipts  int    `json:"receipts"`
		} `json:"producers"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	text, _, _ := run(t, "stats", f)
	none := 0
	for _, p := range rep.Producers {
		var line string
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, p.Topic+" ") && strings.Contains(text[:strings.Index(text, l)], "== Producers") {
				line = l
			}
		}
		dashes := strings.HasSuffix(strings.TrimSpace(line), "-       -       -") || strings.HasSuffix(strings.Join(strings.Fields(line), " "), "- - -")
		if (p.Latencies == 0) != dashes {
			t.Errorf("%s: %d latencies, table row %q", p.Topic, p.Latencies, line)
		}
		if p.Latencies == 0 {
			none++
		}
	}
	if none == 0 || none == len(rep.Producers) {
		t.Fatalf("%d of %d producers without latency: errors.pcap should have one refused producer and others", none, len(rep.Producers))
	}
}
