package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDiffExitCodes: diff exits like diff(1): 0 same, 1 different, 2 error.
func TestDiffExitCodes(t *testing.T) {
	const (
		basic  = "../testdata/pcaps/basic.pcap"
		basicB = "../testdata/diff/basic-b.pcap"
		extra  = "../testdata/diff/basic-extra.pcap"
		slow   = "../testdata/diff/basic-slow-lookup.pcap"
		golden = "../testdata/diff/basic.golden.json"
		many   = "../testdata/pcaps/many.pcap"
		slowP  = "../testdata/diff/many-slow-producer.pcap"
	)
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // substring
		stderr   string // substring
		noStdout bool
	}{
		{"same scenario", []string{basic, basicB}, 0, "no differences", "", false},
		{"golden vs capture", []string{golden, basicB}, 0, "no differences", "", false},
		{"capture vs golden", []string{basicB, golden}, 0, "no differences", "", false},
		{"extra request", []string{basic, extra}, 1, "+c2s GET_LAST_MESSAGE_ID", "", false},
		{"latency off by default", []string{basic, slow}, 0, "no differences", "", false},
		{"latency threshold", []string{"--latency-threshold", "50%", many, slowP}, 1, "!PRODUCER p99", "", false},
		{"junit, differences", []string{"-o", "junit", basic, extra}, 1, `<testsuites name="pulsarscope diff" tests=`, "", false},
		{"junit, same", []string{"-o", "junit", basic, basicB}, 0, `failures="0"`, "", false},
		{"latency threshold, too few requests", []string{"--latency-threshold", "50%", basic, slow}, 0, "not enough samples: 2 and 2 requests", "", false},
		{"latency threshold, fewer samples asked", []string{"--latency-threshold", "50%", "--latency-min-samples", "30", many, slowP}, 0, "not enough samples: 20 and 20 requests, a regression needs 30", "", false},
		{"ignore the difference", []string{"--ignore", "ack-frames,keepalive", "--latency-threshold", "50", "--latency-min", "1h", many, slowP}, 0, "", "", false},
		{"missing file", []string{basic, "no-such.pcap"}, 2, "", "no-such.pcap", true},
		{"not a capture", []string{basic, "diff_test.go"}, 2, "", "diff_test.go", true},
		{"unknown field", []string{"--ignore", "nope", basic, basicB}, 2, "", `"nope"`, true},
		{"bad threshold", []string{"--latency-threshold", "lots", basic, basicB}, 2, "", "latency-threshold", true},
		{"bad format", []string{"-o", "xml", basic, basicB}, 2, "", "formats", true},
		{"one argument", []string{basic}, 2, "", "", true},
		{"unknown flag", []string{"--frobnicate", basic, basicB}, 2, "", "frobnicate", true},
		{"keep what the golden dropped", []string{"--keep", "request_id", golden, basicB}, 2, "", "re-record", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"diff", "--color", "never"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			if !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, out)
			}
			if !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, errOut)
			}
			if tt.noStdout && out != "" {
				t.Errorf("output on error:\n%s", out)
			}
		})
	}
}

// TestDiffJSON: -o json is one document with "same" and the summary.
func TestDiffJSON(t *testing.T) {
	out, _, code := run(t, "diff", "-o", "json", "../testdata/pcaps/basic.pcap", "../testdata/diff/basic-lz4.pcap")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var doc struct {
		Same    bool `json:"same"`
		Summary struct {
			Changed int `json:"commands_changed"`
		} `json:"summary"`
		Streams []struct {
			Key    string `json:"key"`
			Fields []struct {
				Type, Path, Baseline, Candidate string
			} `json:"fields"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if doc.Same || doc.Summary.Changed != 20 || len(doc.Streams) != 2 {
		t.Errorf("unexpected document: %+v", doc)
	}
	found := false
	for _, s := range doc.Streams {
		for _, f := range s.Fields {
			if f.Type == "SEND" && f.Path == "metadata.compression" && f.Candidate == `"LZ4"` {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no SEND metadata.compression change in %+v", doc.Streams)
	}
}

// TestDiffColor: --color always colors; auto with NO_COLOR or a pipe does not.
func TestDiffColor(t *testing.T) {
	args := []string{"../testdata/pcaps/basic.pcap", "../testdata/diff/basic-extra.pcap"}
	out, _, _ := run(t, append([]string{"diff", "--color", "always"}, args...)...)
	if !strings.Contains(out, "\x1b[32m+c2s GET_LAST_MESSAGE_ID") {
		t.Errorf("no green added line with --color always:\n%q", out)
	}
	out, _, _ = run(t, append([]string{"diff"}, args...)...)
	if strings.Contains(out, "\x1b[") {
		t.Errorf("color on a pipe with --color auto:\n%q", out)
	}
}

// TestDiffUpdate: --update writes the golden transcript (a capture is
// never overwritten), and the golden then compares the same.
func TestDiffUpdate(t *testing.T) {
	dir := t.TempDir()
	golden := filepath.Join(dir, "golden.json")
	capture := "../testdata/diff/basic-b.pcap"
	if _, errOut, code := run(t, "diff", "--update", golden, capture); code != 0 {
		t.Fatalf("--update: exit %d: %s", code, errOut)
	}
	if _, _, code := run(t, "diff", golden, "../testdata/pcaps/basic.pcap"); code != 0 {
		t.Fatalf("golden vs capture: exit %d", code)
	}
	// Update with other rules, then compare under them.
	if _, errOut, code := run(t, "diff", "--update", "--keep", "keepalive", golden, capture); code != 0 {
		t.Fatalf("--update --keep: exit %d: %s", code, errOut)
	}
	if out, _, code := run(t, "diff", "--keep", "keepalive", golden, capture); code != 0 {
		t.Fatalf("golden (keepalive kept) vs its capture: exit %d\n%s", code, out)
	}
	// A capture as BASELINE is refused and left alone.
	pcap := filepath.Join(dir, "x.pcap")
	orig, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pcap, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, "diff", "--update", pcap, capture); code != 2 || !strings.Contains(errOut, "not a transcript") {
		t.Fatalf("--update over a capture: exit %d: %s", code, errOut)
	}
	if now, _ := os.ReadFile(pcap); string(now) != string(orig) {
		t.Error("--update modified a capture")
	}
}

// TestReadTranscript: 'read -o transcript' writes what diff compares; it
// round-trips against its capture.
func TestReadTranscript(t *testing.T) {
	out, errOut, code := run(t, "read", "-o", "transcript", "../testdata/pcaps/basic.pcap")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if dout, _, code := run(t, "diff", "--latency-threshold", "1%", path, "../testdata/pcaps/basic.pcap"); code != 0 {
		t.Fatalf("transcript vs its capture: exit %d\n%s", code, dout)
	}
	if regexp.MustCompile(`"(request_id|producer_id|consumer_id|publish_time)":[0-9]`).MatchString(out) {
		t.Error("transcript holds times or ids")
	}
}

// TestDiffSecrets: credentials never reach transcripts or diff output
// without --show-secrets.
func TestDiffSecrets(t *testing.T) {
	const token = "lab-token"
	auth := "../testdata/pcaps/auth.pcap"
	if _, err := os.Stat(auth); err != nil {
		t.Skip("no auth capture")
	}
	out, _, _ := run(t, "read", "-o", "transcript", auth)
	if strings.Contains(out, token) || !strings.Contains(out, "<redacted") {
		t.Error("transcript shows a secret")
	}
	out, _, _ = run(t, "diff", auth, "../testdata/pcaps/basic.pcap")
	if strings.Contains(out, token) {
		t.Error("diff shows a secret")
	}
	out, _, _ = run(t, "diff", "--show-secrets", auth, "../testdata/pcaps/basic.pcap")
	if !strings.Contains(out, token) {
		t.Error("diff --show-secrets hides the secret")
	}
}
