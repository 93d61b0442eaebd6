package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
)

// TestCaptureOutputs: capture has every output of read (newOutput is
// shared), and prints what read prints of the -w file it wrote.
func TestCaptureOutputs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW): run the tests as root")
	}
	b := buildLab(t)
	port := freePort(t)
	p := fmt.Sprint(port)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"text-tree-hex-payload-events", []string{"-V", "-x", "--payload", "--events", "--color", "never"}},
		{"json-filter", []string{"-o", "json", "--payload", "-Y", `type == "SEND" || type == "MESSAGE"`}},
		{"transcript", []string{"-o", "transcript"}},
		{"quiet", []string{"-q", "--progress", "never"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "live.pcapng")
			res := startCapture(t, append([]string{"capture", "-i", "lo", "--port", p, "-f", "port " + p, "-w", file}, tc.args...)...)
			want := runScenario(t, b, port, "basic")
			total := 0
			for _, m := range want {
				for _, n := range m {
					total += n
				}
			}
			r := interrupt(t, res)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			out, stderr, code := run(t, append([]string{"read", "--port", p, file}, tc.args...)...)
			if code != 0 {
				t.Fatalf("read: exit %d: %s", code, stderr)
			}
			live := r.stdout
			if tc.name == "quiet" {
				// -q: capture's own summary follows read's.
				live, _, _ = strings.Cut(live, "capture lo:")
				if !strings.HasPrefix(out, fmt.Sprintf("%d frames", total)) {
					t.Errorf("read -q: %q", out)
				}
			}
			if len(out) < 100 && tc.name != "quiet" {
				t.Errorf("read output too short: %q", out)
			}
			if live != out {
				t.Errorf("live output differs from read of the -w file: %s", firstDiff(out, live))
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCaptureStreams: text and JSON frames are written out while the
// capture runs, not when it ends.
func TestCaptureStreams(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW): run the tests as root")
	}
	b := buildLab(t)
	port := freePort(t)
	p := fmt.Sprint(port)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			liveMu.Lock()
			opened := make(chan *capture.Live, 1)
			liveOpenHook = func(l *capture.Live) { opened <- l }
			out := &syncBuffer{}
			res := make(chan mainResult, 1)
			go func() {
				var e bytes.Buffer
				code := Main([]string{"capture", "-i", "lo", "--port", p, "-f", "port " + p, "-o", format}, strings.NewReader(""), out, &e)
				res <- mainResult{"", e.String(), code}
			}()
			select {
			case <-opened:
			case <-time.After(10 * time.Second):
				liveOpenHook = nil
				liveMu.Unlock()
				t.Fatal("capture did not open")
			}
			want := runScenario(t, b, port, "basic")
			total := 0
			for _, m := range want {
				for _, n := range m {
					total += n
				}
			}
			lines := 0
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if lines = strings.Count(out.String(), "\n"); lines >= total {
					break
				}
			}
			r := interrupt(t, res)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if lines < total { // JSON adds open and close events
				t.Errorf("%d lines for %d frames written while the capture ran", lines, total)
			}
		})
	}
}
