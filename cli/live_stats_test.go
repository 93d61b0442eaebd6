package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// receivedByFilter reads the kernel's counters from capture's summary line.
func receivedByFilter(t *testing.T, summary string) (received, dropped uint64) {
	t.Helper()
	m := regexp.MustCompile(`(\d+) received by filter, (\d+) dropped by kernel`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("no kernel counters in the summary %q", summary)
	}
	r, _ := strconv.ParseUint(m[1], 10, 64)
	d, _ := strconv.ParseUint(m[2], 10, 64)
	return r, d
}

// TestCaptureKernelCounters: the kernel's counters of a live capture reach
// the -w pcapng file (an Interface Statistics Block, read back by 'stats')
// and the report of 'capture -o stats' / '-o stats-json', the same as the
// summary line says.
func TestCaptureKernelCounters(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW): run the tests as root")
	}
	b := buildLab(t)
	port := freePort(t)
	p := fmt.Sprint(port)
	base := []string{"capture", "-i", "lo", "--port", p, "-f", "port " + p}

	t.Run("write-then-stats", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "x.pcapng")
		res := startCapture(t, append(base, "-q", "-w", file)...)
		runScenario(t, b, port, "basic")
		r := interrupt(t, res)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		received, dropped := receivedByFilter(t, r.stdout)
		out, stderr, code := run(t, "stats", "--port", p, file)
		if code != 0 {
			t.Fatalf("stats: exit %d: %s", code, stderr)
		}
		want := fmt.Sprintf("pulsarscope stats: %s\n\n== Capture\n", file)
		section, _, _ := strings.Cut(strings.TrimPrefix(out, want), "\n\n")
		lines := strings.Split(section, "\n")
		if !strings.HasPrefix(out, want) || len(lines) != 2 {
			t.Fatalf("stats: no Capture section of one row: %.400s", out)
		}
		f := strings.Fields(lines[1])
		if len(f) != 7 || f[0] != file || f[1] != "lo" || f[2] != fmt.Sprint(received) || f[3] != "0" || received < 60 || dropped != 0 {
			t.Errorf("Capture row %q; the summary said %d received, %d dropped", lines[1], received, dropped)
		}
		out, _, _ = run(t, "stats", "-o", "json", "--port", p, file)
		var rep statsCapture
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Capture) != 1 || rep.Capture[0].Start == nil || rep.Capture[0].SpanUS == nil || *rep.Capture[0].SpanUS <= 0 {
			t.Errorf("capture %+v", rep.Capture)
		}
	})

	t.Run("o-stats", func(t *testing.T) {
		res := startCapture(t, append(base, "-o", "stats")...)
		want := runScenario(t, b, port, "basic")
		r := interrupt(t, res)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		received, _ := receivedByFilter(t, r.stderr) // stdout holds the report
		head := "pulsarscope stats: lo (live capture)\n\n== Capture\ninput"
		if !strings.HasPrefix(r.stdout, head) {
			t.Fatalf("report starts %.200q", r.stdout)
		}
		row := strings.Fields(strings.Split(r.stdout, "\n")[4])
		if len(row) != 7 || row[0] != "live" || row[1] != "lo" || row[2] != fmt.Sprint(received) || row[3] != "0" || received < 60 {
			t.Errorf("Capture row %q, the summary said %d received", row, received)
		}
		// The rest is the report of 'stats': every SEND the broker read.
		if !regexp.MustCompile(`(?m)^SEND +`+fmt.Sprint(want["c2s"]["SEND"])+` +0 `).MatchString(r.stdout) || want["c2s"]["SEND"] != 10 {
			t.Errorf("Commands: want %d SENDs: %s", want["c2s"]["SEND"], r.stdout)
		}
		for _, s := range []string{"== Service response time", "== Producers", "== Byte accounting"} {
			if !strings.Contains(r.stdout, s) {
				t.Errorf("report lacks %q", s)
			}
		}
	})

	t.Run("o-stats-json-ring", func(t *testing.T) {
		dir := t.TempDir()
		res := startCapture(t, append(base, "-o", "stats-json", "-w", filepath.Join(dir, "ring.pcapng"), "-b", "filesize:2")...)
		runScenario(t, b, port, "basic")
		r := interrupt(t, res)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		received, _ := receivedByFilter(t, r.stderr)
		var rep statsCapture
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v: %.300s", err, r.stdout)
		}
		if len(rep.Capture) != 1 || rep.Capture[0].Input != "live" || rep.Capture[0].Interface != "lo" ||
			rep.Capture[0].Received == nil || *rep.Capture[0].Received != received || *rep.Capture[0].Dropped != 0 {
			t.Fatalf("capture %+v, the summary said %d received", rep.Capture, received)
		}
		// Every ring file ends with the counters so far: cumulative, the
		// last file's are the whole capture's.
		files, _ := filepath.Glob(filepath.Join(dir, "ring_*.pcapng"))
		sort.Strings(files)
		if len(files) < 3 {
			t.Fatalf("ring files %v", files)
		}
		args := append([]string{"stats", "-o", "json", "--port", p}, files...)
		out, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("stats: exit %d: %s", code, stderr)
		}
		var ring statsCapture
		if err := json.Unmarshal([]byte(out), &ring); err != nil {
			t.Fatal(err)
		}
		if len(ring.Capture) != len(files) {
			t.Fatalf("%d files, capture %+v", len(files), ring.Capture)
		}
		var prev uint64
		for i, c := range ring.Capture {
			if c.Input != files[i] || c.Received == nil || *c.Received < prev || !c.Start.Equal(*rep.Capture[0].Start) {
				t.Errorf("file %d: %+v (previous received %d)", i, c, prev)
			}
			prev = *c.Received
		}
		if prev != received {
			t.Errorf("last file: %d received, the summary said %d", prev, received)
		}
	})
}
