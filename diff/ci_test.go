package diff

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ciScript extracts the example script of docs/ci.md (its bash block).
func ciScript(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```bash\n")
	if !ok {
		t.Fatal("docs/ci.md has no bash block")
	}
	script, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/ci.md: unterminated bash block")
	}
	return script
}

// TestCIScript runs the docs/ci.md script as written: record a golden from
// a known-good capture (step 2), then compare runs with it (step 3).
func TestCIScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pulsarscope")
	}
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "pulsar-diff.sh")
	if err := os.WriteFile(script, []byte(ciScript(t)), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "pulsarscope")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Step 2: the golden, recorded from a known-good capture.
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	golden := filepath.Join(dir, "testdata", "pulsar.golden.json")
	if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
		t.Fatal(err)
	}
	record := func(from string) {
		rec := exec.Command(bin, "read", "-o", "transcript", abs(from))
		out, err := rec.Output()
		if err != nil {
			t.Fatalf("read -o transcript: %v", err)
		}
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		capture string
		code    int
		log     string // substring of the script's output
		golden  string // the known-good capture (default basic.pcap)
	}{
		{"same scenario, another run", abs("../testdata/diff/basic-b.pcap"), 0, "traffic matches", ""},
		{"an extra request", abs("../testdata/diff/basic-extra.pcap"), 1, "GET_LAST_MESSAGE_ID", ""},
		{"a slower broker", abs("../testdata/diff/many-slow-producer.pcap"), 1, "!PRODUCER p99", "../testdata/pcaps/many.pcap"},
		// Two LOOKUPs each side: too few to tell; the artifact says so.
		{"a slower lookup, too few to tell", abs("../testdata/diff/basic-slow-lookup.pcap"), 0, "traffic matches", ""},
		{"no capture", filepath.Join(dir, "missing.pcap"), 2, "could not compare", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.golden == "" {
				tt.golden = "../testdata/pcaps/basic.pcap"
			}
			record(tt.golden)
			// Run from a work tree holding testdata/pulsar.golden.json (the
			// script's default GOLDEN), as in CI.
			cmd := exec.Command("bash", script, tt.capture)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PULSARSCOPE="+bin)
			var log bytes.Buffer
			cmd.Stdout, cmd.Stderr = &log, &log
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || !strings.Contains(log.String(), tt.log) {
				t.Fatalf("exit %d (want %d), output lacks %q?\n%s", code, tt.code, tt.log, log.String())
			}
			if tt.code == 2 {
				return
			}
			art, err := os.ReadFile(filepath.Join(dir, "artifacts", "pulsar-diff.json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Same bool `json:"same"`
			}
			if err := json.Unmarshal(art, &doc); err != nil || doc.Same != (tt.code == 0) {
				t.Errorf("artifact: same=%v err=%v", doc.Same, err)
			}
			xart, err := os.ReadFile(filepath.Join(dir, "artifacts", "pulsar-diff.xml"))
			if err != nil {
				t.Fatal(err)
			}
			var junit junitSuites
			if err := xml.Unmarshal(xart, &junit); err != nil || junit.Tests == 0 || (junit.Failures == 0) != (tt.code == 0) {
				t.Errorf("JUnit artifact: %d tests, %d failures, %v", junit.Tests, junit.Failures, err)
			}
			if strings.Contains(tt.name, "too few") && !strings.Contains(string(art), "not enough samples: 2 and 2 requests") {
				t.Errorf("artifact lacks the note on too few samples:\n%s", art)
			}
		})
	}
}
