package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCaptureTUILive runs 'pulsarscope capture --tui' in a real terminal
// (a detached tmux session) while the lab's broker and the real Pulsar
// client talk on a free port: rows appear, the status bar counts frames,
// bytes, problems and kernel drops, q exits 0 and the terminal is restored
// (normal screen, cursor shown, mouse reporting off).
func TestCaptureTUILive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW): run the tests as root")
	}
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed: the TUI needs a terminal")
	}
	b := buildLab(t)
	port := freePort(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	status, errFile, pcapng := filepath.Join(dir, "status"), filepath.Join(dir, "stderr"), filepath.Join(dir, "tui.pcapng")
	sock := fmt.Sprintf("pulsarscope-test-%d", os.Getpid())
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmuxBin, append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	script := fmt.Sprintf("%s capture -i lo --tui --port %d -f 'port %d' -w %s 2>%s; echo $? >%s; sleep 300",
		b.pulsarscope, port, port, pcapng, errFile, status)
	tmux("new-session", "-d", "-x", "120", "-y", "40", "sh", "-c", script)
	t.Cleanup(func() { exec.Command(tmuxBin, "-L", sock, "kill-server").Run() })
	pane := func() string { return tmux("capture-pane", "-p", "-t", "0") }
	bar := regexp.MustCompile(`lo │ (\d+) frames │ [0-9.]+ (B|KiB|MiB) │ (\d+) problems │ drops (\d+) │ LIVE`)
	waitFor := func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if s = pane(); ok(s) {
				return s
			}
		}
		st, _ := os.ReadFile(status)
		e, _ := os.ReadFile(errFile)
		t.Fatalf("%s: not seen; exit %q, stderr %q, screen:\n%s", what, st, e, s)
		return ""
	}
	// The status bar is drawn once the capture is open.
	waitFor("status bar", func(s string) bool { return bar.MatchString(s) })

	want := runScenario(t, b, port, "basic")
	total := 0
	for _, m := range want {
		for _, n := range m {
			total += n
		}
	}
	screen := waitFor(fmt.Sprintf("%d frames", total), func(s string) bool {
		m := bar.FindStringSubmatch(s)
		return m != nil && m[1] == strconv.Itoa(total)
	})
	m := bar.FindStringSubmatch(screen)
	if m[3] != "0" || m[4] != "0" {
		t.Errorf("status bar: %s problems, drops %s, want 0 and 0: %q", m[3], m[4], m[0])
	}
	for _, row := range []string{"→ SEND ", "← SEND_RECEIPT", "← MESSAGE", "→ ACK", "→ CLOSE_CONSUMER"} {
		if !strings.Contains(screen, row) {
			t.Errorf("no %q row on the screen:\n%s", row, screen)
		}
	}
	if got := tmux("display", "-p", "-t", "0", "#{alternate_on}"); strings.TrimSpace(got) != "1" {
		t.Errorf("the TUI is not on the alternate screen: %q", got)
	}

	tmux("send-keys", "-t", "0", "q")
	var code []byte
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if code, _ = os.ReadFile(status); len(code) > 0 {
			break
		}
	}
	e, _ := os.ReadFile(errFile)
	if strings.TrimSpace(string(code)) != "0" {
		t.Fatalf("q: exit %q, stderr %q", code, e)
	}
	if !strings.Contains(string(e), "capture lo:") || !strings.Contains(string(e), " 0 dropped by kernel") {
		t.Errorf("summary on stderr: %q", e)
	}
	// The -w file ends with the kernel's counters, those of the summary.
	received, _ := receivedByFilter(t, string(e))
	out, stderr, code2 := run(t, "stats", "-o", "json", "--port", strconv.Itoa(port), pcapng)
	var rep statsCapture
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code2 != 0 {
		t.Errorf("stats of the -w file: exit %d, %v: %s", code2, err, stderr)
	} else if len(rep.Capture) != 1 || rep.Capture[0].Received == nil || *rep.Capture[0].Received != received || received == 0 {
		t.Errorf("stats of the -w file: capture %+v, the summary said %d received", rep.Capture, received)
	}
	// Terminal restored: normal screen, cursor visible, no mouse reporting.
	flags := strings.TrimSpace(tmux("display", "-p", "-t", "0", "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{mouse_button_flag} #{mouse_sgr_flag}"))
	if flags != "0 1 0 0 0" {
		t.Errorf("terminal not restored: alternate screen, cursor, mouse any/button/sgr = %q, want \"0 1 0 0 0\"", flags)
	}
}
