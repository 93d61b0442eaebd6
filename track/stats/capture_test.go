package stats

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCaptureRows(t *testing.T) {
	c := New()
	if b, _ := json.Marshal(c.Report()); !strings.HasPrefix(string(b), `{"capture":[],`) {
		t.Errorf("no counters: %.60s", b)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	end := start.Add(1500 * time.Millisecond)
	recv, drop := uint64(71), uint64(2)
	c.AddCapture(CaptureRow{Input: "a.pcapng", Interface: "lo", Received: &recv, Dropped: &drop, Start: &start, End: &end},
		CaptureRow{Input: "a.pcapng", Index: 1}) // a block with no counters and no times
	r := c.Report()
	if len(r.Capture) != 2 || r.Capture[0].SpanUS == nil || *r.Capture[0].SpanUS != 1500000 || r.Capture[1].SpanUS != nil {
		t.Fatalf("capture %+v", r.Capture)
	}
	b, _ := json.Marshal(r.Capture)
	want := `[{"input":"a.pcapng","index":0,"interface":"lo","received":71,"dropped":2,"start":"2026-01-02T03:04:05.000006Z","end":"2026-01-02T03:04:06.500006Z","span_us":1500000},` +
		`{"input":"a.pcapng","index":1,"interface":"","received":null,"dropped":null,"start":null,"end":null,"span_us":null}]`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
}
