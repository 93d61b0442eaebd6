package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoundTrip: capture → transcript → JSON → transcript compares the same
// as the capture, and writing is byte-stable.
func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"basic.pcap", "basic-producer-error.pcap", "basic-batching.pcap"} {
		t.Run(name, func(t *testing.T) {
			var c transcripts
			orig := c.get(t, testdata(name))
			var first bytes.Buffer
			if _, err := orig.WriteTo(&first); err != nil {
				t.Fatal(err)
			}
			back, err := ReadTranscript(bytes.NewReader(first.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			var second bytes.Buffer
			if _, err := back.WriteTo(&second); err != nil {
				t.Fatal(err)
			}
			if first.String() != second.String() {
				t.Errorf("written transcript not stable:\n%s\n---\n%s", first.String(), second.String())
			}
			if !json.Valid(first.Bytes()) {
				t.Error("transcript is not valid JSON")
			}
			res, err := Compare(back, orig, Options{LatencyThreshold: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Same() {
				t.Errorf("transcript differs from its capture: %+v", res.Summary)
			}
		})
	}
}

// TestGoldenUpToDate: the committed golden transcript of basic.pcap is what
// the recorder writes today (a change of format or rules shows here).
func TestGoldenUpToDate(t *testing.T) {
	want, err := os.ReadFile(testdata("basic.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c transcripts
	var got bytes.Buffer
	if _, err := c.get(t, testdata("basic.pcap")).WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	// Latency figures are measured, the rest must match byte for byte.
	cut := func(s string) string { return s[:strings.Index(s, `  "latency"`)] }
	if cut(got.String()) != cut(string(want)) {
		t.Errorf("testdata/diff/basic.golden.json is out of date; remake it with\n  go run . read -o transcript testdata/pcaps/basic.pcap > testdata/diff/basic.golden.json")
	}
}

// TestRules: --ignore and --keep on captures and on recorded transcripts.
func TestRules(t *testing.T) {
	var c transcripts
	golden := c.get(t, testdata("basic.pcap"))
	capB := testdata("basic-b.pcap")
	tests := []struct {
		name       string
		opts       Options
		fromCap    bool // compare two captures recorded under opts, else golden vs capture
		wantErr    string
		wantSame   bool
		wantChange int
	}{
		{name: "unknown field", opts: Options{Ignore: []string{"no_such_field"}}, wantErr: "not a field"},
		{name: "keep request_id vs golden", opts: Options{Keep: []string{"request_id"}}, wantErr: "re-record"},
		{name: "ignore payload vs golden", opts: Options{Ignore: []string{"payload", "message_id", "server", "keepalive", "ack-frames"}}, wantSame: true},
		{name: "ignore topic", opts: Options{Ignore: []string{"topic"}}, fromCap: true, wantSame: true},
		{name: "keep message ids literally", opts: Options{Keep: []string{"ledgerId"}}, fromCap: true, wantSame: true},
		{name: "keep keepalive", opts: Options{Keep: []string{"keepalive"}}, fromCap: true, wantSame: true},
		{name: "keep ack frames", opts: Options{Keep: []string{"ack-frames"}}, fromCap: true, wantSame: true},
		// Request ids are allocated identically by the client in both runs.
		{name: "keep request_id", opts: Options{Keep: []string{"request_id"}}, fromCap: true, wantSame: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := golden
			var cand *Transcript
			var err error
			if tt.fromCap {
				base, err = Load(context.Background(), testdata("basic.pcap"), tt.opts)
				if err == nil {
					cand, err = Load(context.Background(), capB, tt.opts)
				}
			} else {
				cand, err = Load(context.Background(), capB, tt.opts)
			}
			var res *Result
			if err == nil {
				res, err = Compare(base, cand, tt.opts)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Same() != tt.wantSame {
				var buf bytes.Buffer
				res.WriteText(&buf, TextOptions{})
				t.Errorf("same = %v, want %v\n%s", res.Same(), tt.wantSame, buf.String())
			}
		})
	}
}

// TestIgnoreOrder: commands moved within a stream differ, except as a
// multiset.
func TestIgnoreOrder(t *testing.T) {
	var c transcripts
	base := c.get(t, testdata("basic.pcap"))
	var buf bytes.Buffer
	base.WriteTo(&buf)
	moved, err := ReadTranscript(&buf)
	if err != nil {
		t.Fatal(err)
	}
	longest := 0 // the stream with the most commands
	for i, st := range moved.Streams {
		if len(st.Commands) > len(moved.Streams[longest].Commands) {
			longest = i
		}
	}
	cmds := moved.Streams[longest].Commands
	if len(cmds) < 4 {
		t.Fatalf("longest stream has %d commands", len(cmds))
	}
	cmds[2], cmds[len(cmds)-1] = cmds[len(cmds)-1], cmds[2]
	for _, tt := range []struct {
		ignoreOrder, wantSame bool
	}{{false, false}, {true, true}} {
		res, err := Compare(base, moved, Options{IgnoreOrder: tt.ignoreOrder})
		if err != nil {
			t.Fatal(err)
		}
		if res.Same() != tt.wantSame {
			t.Errorf("ignore-order %v: same = %v, want %v", tt.ignoreOrder, res.Same(), tt.wantSame)
		}
	}
}

// TestSecrets: credentials are redacted in transcripts and diffs unless
// asked for.
func TestSecrets(t *testing.T) {
	const token = "lab-token"
	path := "../testdata/pcaps/auth.pcap"
	if _, err := os.Stat(path); err != nil {
		t.Skip("no auth capture")
	}
	for _, show := range []bool{false, true} {
		tr, err := Load(context.Background(), path, Options{ShowSecrets: show})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		tr.WriteTo(&buf)
		if got := strings.Contains(buf.String(), token); got != show {
			t.Errorf("show-secrets %v: token in transcript = %v", show, got)
		}
		if !show {
			continue
		}
		// A transcript with secrets, compared without --show-secrets:
		// the diff output must not show them.
		empty := &Transcript{Format: Format, Rules: DefaultRules()}
		empty.fill()
		res, err := Compare(empty, tr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		res.WriteText(&out, TextOptions{})
		res.WriteJSON(&out)
		if strings.Contains(out.String(), token) {
			t.Error("diff output shows a secret without --show-secrets")
		}
		if !strings.Contains(out.String(), "<redacted") {
			t.Error("diff output has no redaction marker")
		}
	}
}

// TestEveryCapture: every committed capture (faults included) records a
// transcript that round-trips and compares the same as its capture.
func TestEveryCapture(t *testing.T) {
	files, err := filepath.Glob("../testdata/pcaps/*.pcap*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".pcap") && !strings.HasSuffix(f, ".pcapng") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			tr, err := Load(context.Background(), f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := tr.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			back, err := ReadTranscript(&buf)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Compare(back, tr, Options{LatencyThreshold: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Same() {
				t.Errorf("transcript differs from its capture: %+v", res.Summary)
			}
		})
	}
}

// TestEntriesRules: a transcript recorded with listed batch entries
// compares under the default (summarised) rules, and the same capture.
func TestEntriesRules(t *testing.T) {
	ctx := context.Background()
	f := testdata("basic-batching.pcap")
	listed, err := Load(ctx, f, Options{Keep: []string{PseudoEntries}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	listed.WriteTo(&buf)
	if !strings.Contains(buf.String(), `"entries":[{"metadata"`) {
		t.Fatal("--keep entries does not list entries")
	}
	summarised, err := Load(ctx, f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {Ignore: []string{PseudoEntries}}} {
		res, err := Compare(listed, summarised, o)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Same() {
			t.Errorf("%+v: listed vs summarised entries differ: %+v", o, res.Summary)
		}
	}
}
