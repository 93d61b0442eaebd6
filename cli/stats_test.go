package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatsJSON(t *testing.T) {
	out, errOut, code := run(t, "stats", "-o", "json", "../testdata/pcaps/errors.pcap")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		SRT []struct {
			Request    string `json:"request"`
			Count      int    `json:"count"`
			Unanswered int    `json:"unanswered"`
		} `json:"service_response_time"`
		Problems []struct {
			Code  string `json:"code"`
			Count int    `json:"count"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, s := range r.SRT {
		got[s.Request] = [2]int{s.Count, s.Unanswered}
	}
	if got["SEND"] != [2]int{10, 1} || got["LOOKUP"] != [2]int{11, 0} {
		t.Errorf("srt %v", got)
	}
	if len(r.Problems) != 3 {
		t.Errorf("problems %v", r.Problems)
	}
}

func TestReadFilterAndTwoPass(t *testing.T) {
	out, errOut, code := run(t, "read", "-2", "-o", "json", "-Y", `type == "SEND" && response == "SEND_RECEIPT"`, "../testdata/pcaps/basic.pcap")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 10 || !strings.Contains(lines[0], `"response":{"n":`) {
		t.Errorf("%d lines: %s", len(lines), lines[0])
	}
	_, errOut, code = run(t, "read", "-Y", `type = "SEND"`, "../testdata/pcaps/basic.pcap")
	if code != ExitUsage || !strings.Contains(errOut, "^") {
		t.Errorf("bad filter: exit %d: %s", code, errOut)
	}
}

func TestStatsTitle(t *testing.T) {
	out, errOut, code := run(t, "stats", "../testdata/pcaps/basic.pcap", "../testdata/pcaps/many.pcap")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "pulsarscope stats: ../testdata/pcaps/basic.pcap, ../testdata/pcaps/many.pcap\n\n== Commands\n"; !strings.HasPrefix(out, want) {
		t.Errorf("stats text starts %q, want %q", out[:min(len(out), len(want))], want)
	}
	if errOut != "" {
		t.Errorf("stderr (not a terminal, --progress auto): %q", errOut)
	}
}

// TestProgress checks --progress always: a bar per pass and file (drawn
// at once, then at most ten times a second) on stderr, cleared at the end,
// and nothing else changed.
func TestProgress(t *testing.T) {
	plain, _, _ := run(t, "stats", "../testdata/pcaps/basic.pcap")
	out, errOut, code := run(t, "stats", "--progress", "always", "../testdata/pcaps/basic.pcap")
	if code != ExitOK || out != plain {
		t.Fatalf("exit %d, output changed by --progress: %s", code, errOut)
	}
	fi, err := os.Stat("../testdata/pcaps/basic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	size := fmt.Sprintf("/%.1f kB", float64(fi.Size())/1000) // the bar's SI units
	for _, want := range []string{"basic.pcap", "0%", size} {
		if !strings.Contains(errOut, want) {
			t.Errorf("progress %q lacks %q", errOut, want)
		}
	}
	if strings.Contains(errOut, "pass ") {
		t.Errorf("progress %q: stats without -Y reads once", errOut)
	}
	// A filter may look at responses: two passes, a bar each.
	_, errOut, code = run(t, "stats", "--progress", "always", "-Y", "size > 0", "../testdata/pcaps/basic.pcap")
	if code != ExitOK {
		t.Fatalf("stats -Y: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"pass 1/2 basic.pcap", "pass 2/2 basic.pcap"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("progress %q lacks %q", errOut, want)
		}
	}
	if !strings.HasSuffix(errOut, "\x1b[2K\r") {
		t.Errorf("progress not cleared at the end: %q", errOut)
	}
	_, errOut, code = run(t, "read", "-q", "--progress", "always", "../testdata/pcaps/basic.pcap", "../testdata/pcaps/many.pcap")
	if code != ExitOK || !strings.Contains(errOut, "[1/2] basic.pcap") || !strings.Contains(errOut, "[2/2] many.pcap") {
		t.Errorf("read -q: exit %d, progress %q", code, errOut)
	}
	// stdin: size unknown, a spinner with the bytes read.
	b, err := os.ReadFile("../testdata/pcaps/basic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	code = Main([]string{"stats", "-1", "--progress", "always", "-"}, bytes.NewReader(b), &o, &e)
	if code != ExitOK || !strings.Contains(e.String(), "stdin") || !strings.HasPrefix(o.String(), "pulsarscope stats: stdin\n") {
		t.Errorf("stdin: exit %d, progress %q, output %.40q", code, e.String(), o.String())
	}
	_, errOut, code = run(t, "stats", "--progress", "sometimes", "../testdata/pcaps/basic.pcap")
	if code != ExitUsage || !strings.Contains(errOut, "--progress") {
		t.Errorf("bad --progress: exit %d: %s", code, errOut)
	}
	_, errOut, code = run(t, "stats", "--progress", "always", "../testdata/pcaps/nonexistent.pcap")
	if code != ExitInput || !strings.Contains(errOut, "check the path") {
		t.Errorf("missing file: exit %d: %s", code, errOut)
	}
}

// TestStatsPayloads: stats leaves payloads compressed unless --payloads,
// and says so in both formats; the tables are the same either way on a
// clean capture.
func TestStatsPayloads(t *testing.T) {
	const pcap = "../testdata/pcaps/batching-compression.pcap"
	const note = "(payload contents not checked"
	fast, errOut, code := run(t, "stats", pcap)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	full, errOut, code := run(t, "stats", "--payloads", pcap)
	if code != ExitOK {
		t.Fatalf("--payloads: exit %d: %s", code, errOut)
	}
	if !strings.Contains(fast, note) || strings.Contains(full, note) {
		t.Errorf("the note %q belongs only to the report without --payloads", note)
	}
	if body, _, _ := strings.Cut(fast, "\n"+note); body != full {
		t.Errorf("tables differ with --payloads:\n%s\n---\n%s", body, full)
	}
	for _, c := range []struct {
		args []string
		want bool
	}{{[]string{"stats", "-o", "json", pcap}, false}, {[]string{"stats", "-o", "json", "--payloads", pcap}, true}} {
		out, _, code := run(t, c.args...)
		var rep struct {
			PayloadsChecked *bool `json:"payloads_checked"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK {
			t.Fatalf("%v: exit %d, %v", c.args, code, err)
		}
		if rep.PayloadsChecked == nil || *rep.PayloadsChecked != c.want {
			t.Errorf("%v: payloads_checked %v, want %v", c.args, rep.PayloadsChecked, c.want)
		}
	}
}

// TestStatsPasses: one pass (the default without -Y) and two (-2) give
// the same report on every committed capture, those with a lost, moved or
// cut segment too: a hole is declared as soon as the peer acknowledges
// past it, so that what follows it is numbered, timed and paired in
// capture order. On basic-drop.pcap, whose lost segment carried a SEND,
// the other nine SENDs are paired in both.
func TestStatsPasses(t *testing.T) {
	names := shippedCaptures(t)
	same := 0
	for _, name := range names {
		one, _, code1 := run(t, "stats", name)
		two, _, code2 := run(t, "stats", "-2", name)
		if code1 != ExitOK || code2 != ExitOK {
			t.Fatalf("%s: exit %d and %d", name, code1, code2)
		}
		if one != two {
			t.Errorf("%s: one and two passes differ:\n%s\n---\n%s", name, one, two)
		} else {
			same++
		}
		if filepath.Base(name) == "basic-drop.pcap" {
			srt := func(out string) string { // the SEND count of the response time table
				_, table, _ := strings.Cut(out, "== Service response time")
				for _, l := range strings.Split(table, "\n") {
					if strings.HasPrefix(l, "SEND ") {
						return strings.Fields(l)[1]
					}
				}
				return ""
			}
			if srt(one) != "9" || srt(two) != "9" {
				t.Errorf("basic-drop: SENDs paired %q in one pass, %q in two; want 9 and 9", srt(one), srt(two))
			}
		}
	}
	if same < 20 {
		t.Errorf("only %d captures compared equal", same)
	}
	if _, _, code := run(t, "stats", "-1", "-2", "../testdata/pcaps/basic.pcap"); code != ExitUsage {
		t.Errorf("-1 -2: exit %d, want %d", code, ExitUsage)
	}
}
