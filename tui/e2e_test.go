package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEndToEndTmux runs the real binary in tmux on a testdata capture and
// drives it with keys. It skips only when tmux is missing and cannot be
// installed (CI installs it; as root the test tries apt-get itself).
func TestEndToEndTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tmux := needTmux(t)
	bin := filepath.Join(t.TempDir(), "pulsarscope")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	capFile, err := filepath.Abs(pcap("basic.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	session := fmt.Sprintf("pulsarscope-e2e-%d", os.Getpid())
	exitFile := filepath.Join(t.TempDir(), "exit")
	// The shell records the exit code, then the pane stays for capture.
	script := fmt.Sprintf("%s tui %s; echo $? > %s; sleep 60", bin, capFile, exitFile)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "env", "TERM=xterm-256color", "sh", "-c", script)
	t.Cleanup(func() { exec.Command(tmux, "kill-session", "-t", session).Run() })
	pane := func() string { return run("capture-pane", "-p", "-t", session) }
	waitFor := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := pane()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	keys := func(k ...string) { run(append([]string{"send-keys", "-t", session}, k...)...) }
	has := func(sub string) func(string) bool { return func(s string) bool { return strings.Contains(s, sub) } }

	// The first rows of the timeline.
	s := waitFor("the timeline", has("65 frames"))
	lines := strings.Split(s, "\n")
	if len(lines) < 4 || !strings.Contains(lines[2], "CONNECT ") || !strings.Contains(lines[3], "CONNECTED") || !strings.Contains(lines[4], "PARTITIONED_METADATA") {
		t.Fatalf("first rows are not CONNECT, CONNECTED, PARTITIONED_METADATA:\n%s", s)
	}

	// Enter opens the detail of frame 18 (SEND) with its decoded fields.
	for i := 0; i < 17; i++ {
		keys("j")
	}
	keys("Enter")
	s = waitFor("the detail pane", has("Detail ── frame 18 SEND"))
	for _, want := range []string{"producer_id: 1", "sequence_id: 0", "Hex ── 92 bytes"} {
		if !strings.Contains(s, want) {
			t.Errorf("detail lacks %q:\n%s", want, s)
		}
	}

	// Jump to the pair: the SEND_RECEIPT, frame 19.
	keys("p")
	waitFor("the pair", has("Detail ── frame 19 SEND_RECEIPT"))

	// The filter narrows the rows.
	// (A pause after Escape, or the terminal reads Escape f as alt+f.)
	keys("Escape")
	waitFor("the detail pane to close", func(s string) bool { return !strings.Contains(s, "Detail ──") })
	keys("f")
	keys("-l", `type == "SEND_RECEIPT"`)
	waitFor("the filter line", has("✓"))
	keys("Enter")
	s = waitFor("the filtered timeline", has("10/65 frames"))
	for _, l := range strings.Split(s, "\n")[2:12] {
		if !strings.Contains(l, "SEND_RECEIPT") {
			t.Errorf("filtered row is not a SEND_RECEIPT: %q", l)
		}
	}

	// q exits 0.
	keys("q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(exitFile)
		if err == nil && len(b) > 0 {
			if code := strings.TrimSpace(string(b)); code != "0" {
				t.Fatalf("exit code %s, want 0", code)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pulsarscope did not exit after q; screen:\n%s", pane())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// needTmux returns tmux's path, installing it with apt-get when running as
// root, or skips the test.
func needTmux(t *testing.T) string {
	if p, err := exec.LookPath("tmux"); err == nil {
		return p
	}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("apt-get"); err == nil {
			exec.Command("apt-get", "install", "-y", "tmux").Run()
			if p, err := exec.LookPath("tmux"); err == nil {
				return p
			}
		}
	}
	t.Skip("tmux is not installed and could not be installed (apt-get install -y tmux)")
	return ""
}
