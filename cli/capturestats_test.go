package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// statsCapture is the capture key of 'stats -o json'.
type statsCapture struct {
	Capture []struct {
		Input     string     `json:"input"`
		Index     int        `json:"index"`
		Interface string     `json:"interface"`
		Received  *uint64    `json:"received"`
		Dropped   *uint64    `json:"dropped"`
		Start     *time.Time `json:"start"`
		End       *time.Time `json:"end"`
		SpanUS    *int64     `json:"span_us"`
	} `json:"capture"`
}

// TestStatsCaptureDumpcap: 'stats' of a pcapng file dumpcap wrote shows
// the counters of its Interface Statistics Blocks (two interfaces), in
// text and JSON; a pcap file has none.
func TestStatsCaptureDumpcap(t *testing.T) {
	const file = "../capture/testdata/two-ifaces.pcapng"
	out, errOut, code := run(t, "stats", file)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "pulsarscope stats: " + file + "\n\n== Capture\n"
	if !strings.HasPrefix(out, want) {
		t.Fatalf("text starts %q, want %q", out[:min(len(out), 200)], want)
	}
	section, _, _ := strings.Cut(strings.TrimPrefix(out, want), "\n\n")
	lines := strings.Split(section, "\n")
	if len(lines) != 3 || strings.Fields(lines[0])[0] != "input" {
		t.Fatalf("Capture section %q", section)
	}
	for i, name := range []string{"lo", "any"} {
		// input, interface, received, dropped, start (date, time), span
		f := strings.Fields(lines[1+i])
		if len(f) != 7 || f[0] != file || f[1] != name || f[2] != "21" || f[3] != "0" || f[4] != "2026-11-29" || f[5] != "11:09:54.120" || f[6] != "3.336038s" {
			t.Errorf("row %d: %q", i, lines[1+i])
		}
	}

	out, errOut, code = run(t, "stats", "-o", "json", file)
	if code != ExitOK {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var r statsCapture
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Capture) != 2 {
		t.Fatalf("capture %+v", r.Capture)
	}
	for i, c := range r.Capture {
		if c.Input != file || c.Index != i || c.Received == nil || *c.Received != 21 || c.Dropped == nil || *c.Dropped != 0 ||
			c.Start == nil || c.End == nil || c.SpanUS == nil || *c.SpanUS != 3336038 || c.End.Sub(*c.Start) != 3336038*time.Microsecond {
			t.Errorf("capture[%d] %+v", i, c)
		}
	}

	out, _, _ = run(t, "stats", "-o", "json", "../testdata/pcaps/basic.pcap")
	if !strings.Contains(out, `"capture": []`) {
		t.Errorf("pcap: want an empty capture list: %.200s", out)
	}
	out, _, _ = run(t, "stats", "../testdata/pcaps/basic.pcap")
	if strings.Contains(out, "== Capture") {
		t.Errorf("pcap: a Capture section: %.200s", out)
	}
}

// TestStatsCaptureStdin: stdin is named "stdin", also when -Y reads it
// twice through a temporary copy, and is reported once.
func TestStatsCaptureStdin(t *testing.T) {
	b, err := os.ReadFile("../capture/testdata/two-ifaces.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"stats", "-o", "json", "-"}, {"stats", "-o", "json", "-Y", "size > 0", "-"}} {
		var o, e bytes.Buffer
		if code := Main(args, bytes.NewReader(b), &o, &e); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, e.String())
		}
		var r statsCapture
		if err := json.Unmarshal(o.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Capture) != 2 || r.Capture[0].Input != "stdin" || r.Capture[1].Input != "stdin" {
			t.Errorf("%v: capture %+v", args, r.Capture)
		}
	}
}

// TestCaptureStatsConflicts: -o stats prints the report, not frames (no
// privileges needed: refused before the capture opens).
func TestCaptureStatsConflicts(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"-o", "stats", "-q"}}, {[]string{"-o", "stats-json", "-V"}}, {[]string{"-o", "stats", "--events"}},
	} {
		_, stderr, code := run(t, append([]string{"capture", "-i", "lo"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, "does not apply") {
			t.Errorf("%v: exit %d: %s", c.args, code, stderr)
		}
	}
	_, stderr, code := run(t, "capture", "-i", "lo", "--tui", "-o", "stats")
	if code != ExitUsage {
		t.Errorf("--tui -o stats: exit %d: %s", code, stderr)
	}
}

// TestStatsCaptureFarFuture: a pcapng whose ISB times are beyond year 9999
// (if_tsoffset 2^40, a hostile or broken file) still gives its counters,
// in text and in JSON, with the times left out rather than the JSON failing.
func TestStatsCaptureFarFuture(t *testing.T) {
	const file = "testdata/isb-far-future.pcapng"
	out, errOut, code := run(t, "stats", "-o", "json", file)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep statsCapture
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Capture) != 1 || rep.Capture[0].Received == nil || *rep.Capture[0].Received != 10 ||
		rep.Capture[0].Start != nil || rep.Capture[0].End != nil || rep.Capture[0].SpanUS != nil {
		t.Errorf("capture %+v", rep.Capture)
	}
	if out, _, code := run(t, "stats", file); code != ExitOK || !strings.Contains(out, "eth0") {
		t.Errorf("text: exit %d: %s", code, out)
	}
}
