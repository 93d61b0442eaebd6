package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the text golden files in testdata/golden")

// expectation is the part of a testdata/pcaps/*.expect.json file the
// decode pipeline is checked against. Those files are written by the
// traffic lab from the broker's and driver's own logs (and by the fault
// writer from what it changed), never from pulsarscope's output.
type expectation struct {
	File                      string                    `json:"file"`
	Base                      string                    `json:"base"`
	Connections               int                       `json:"connections"`
	Frames                    map[string]map[string]int `json:"frames"`
	FramesTotal               int                       `json:"frames_total"`
	PayloadFrames             int                       `json:"payload_frames"`
	ChecksummedPayloadFrames  int                       `json:"checksummed_payload_frames"`
	BrokerEntryMetadataFrames int                       `json:"broker_entry_metadata_frames"`
	BatchEntries              int                       `json:"batch_entries"`
	ChunkFrames               int                       `json:"chunk_frames"`
	ExpectProblems            []string                  `json:"expect_problems"`
	NeedsFlags                []string                  `json:"needs_flags"`
	Faults                    []struct {
		NeedsFlags   []string `json:"needs_flags"`
		Kind         string   `json:"kind"`
		Conn         int      `json:"conn"`
		Dir          string   `json:"dir"`
		StreamOffset int64    `json:"stream_offset"`
	} `json:"faults"`
	// Pairs are which frame answers which, as the lab's broker logged them
	// (captures made since it logs them).
	Pairs []brokerPair `json:"pairs"`
}

// record is one NDJSON line of 'read -o json' (docs/json.md).
type record struct {
	N        int             `json:"n"`
	Event    string          `json:"event"`
	Conn     int             `json:"conn"`
	Dir      string          `json:"dir"`
	Type     string          `json:"type"`
	Size     int             `json:"size"`
	Command  json.RawMessage `json:"command"`
	Checksum *struct {
		OK bool `json:"ok"`
	} `json:"checksum"`
	BrokerEntryMetadata json.RawMessage `json:"broker_entry_metadata"`
	Metadata            *struct {
		UUID               *string `json:"uuid"`
		NumMessagesInBatch int     `json:"num_messages_in_batch"`
	} `json:"metadata"`
	Payload *struct {
		Encrypted bool `json:"encrypted"`
	} `json:"payload"`
	Entries    []json.RawMessage `json:"entries"`
	Accounting map[string]struct {
		Seen      int64 `json:"seen"`
		InFrames  int64 `json:"in_frames"`
		Lost      int64 `json:"lost"`
		Skipped   int64 `json:"skipped"`
		Truncated int64 `json:"truncated"`
		Ignored   int64 `json:"ignored"`
	} `json:"accounting"`
	Problems *[]struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"problems"`
}

func loadExpectations(t *testing.T) []expectation {
	t.Helper()
	paths, err := filepath.Glob("../testdata/pcaps/*.expect.json")
	if err != nil || len(paths) < 10 {
		t.Fatalf("expected the lab's captures in testdata/pcaps, found %d (%v)", len(paths), err)
	}
	var out []expectation
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var e expectation
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, e)
	}
	return out
}

func (e expectation) args(format string) []string {
	args := []string{"read", "-o", format}
	args = append(args, e.NeedsFlags...)
	for _, f := range e.Faults {
		args = append(args, f.NeedsFlags...)
	}
	return append(args, filepath.Join("../testdata/pcaps", e.File))
}

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(args, strings.NewReader(""), &o, &e)
	return o.String(), e.String(), code
}

// TestGoldenJSON decodes every committed capture and checks it against the
// lab's expectations: every frame decoded, by direction and type; every
// payload frame's checksum verified; exactly the problems its faults must
// cause (none for real-client captures), never unknown fields; and the
// byte accounting of every stream balanced.
func TestGoldenJSON(t *testing.T) {
	for _, exp := range loadExpectations(t) {
		t.Run(exp.File, func(t *testing.T) {
			out, errOut, code := run(t, exp.args("json")...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			frames := map[string]map[string]int{"c2s": {}, "s2c": {}}
			conns := map[int]bool{}
			var total, payload, checksummed, bem, entries, chunks int
			problems := map[string]bool{}
			sc := bufio.NewScanner(strings.NewReader(out))
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				var r record
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("line is not JSON: %v: %s", err, sc.Text())
				}
				if r.Problems == nil {
					t.Fatalf("record without problems list: %s", sc.Text())
				}
				for _, p := range *r.Problems {
					problems[p.Code] = true
					if p.Code == "checksum-mismatch" && !contains(exp.ExpectProblems, p.Code) {
						t.Errorf("unexpected %s: %s", p.Code, p.Detail)
					}
				}
				if r.Event != "" {
					if r.Event == "close" {
						for dir, a := range r.Accounting {
							if a.Seen != a.InFrames+a.Skipped+a.Truncated+a.Ignored {
								t.Errorf("conn %d %s: accounting does not balance: %+v", r.Conn, dir, a)
							}
						}
					}
					continue
				}
				total++
				if r.N != total {
					t.Errorf("frame numbers not consecutive: got %d, want %d", r.N, total)
				}
				conns[r.Conn] = true
				frames[r.Dir][r.Type]++
				if r.Metadata != nil {
					payload++
					if r.Metadata.UUID != nil {
						chunks++
					}
				}
				if r.Checksum != nil {
					checksummed++
					if !r.Checksum.OK && !contains(exp.ExpectProblems, "checksum-mismatch") {
						t.Errorf("frame %d: checksum not ok", r.N)
					}
				}
				if len(r.BrokerEntryMetadata) > 0 {
					bem++
				}
				entries += len(r.Entries)
				if r.Payload != nil && r.Payload.Encrypted {
					// ciphertext: the batch cannot be split, its metadata
					// says how many entries it holds, as the broker logged
					entries += r.Metadata.NumMessagesInBatch
					if len(r.Entries) > 0 {
						t.Errorf("frame %d: encrypted, with %d entries split", r.N, len(r.Entries))
					}
				}
			}
			if sc.Err() != nil {
				t.Fatal(sc.Err())
			}
			check := func(what string, got, want int) {
				if got != want {
					t.Errorf("%s: got %d, want %d", what, got, want)
				}
			}
			check("frames", total, exp.FramesTotal)
			check("connections", len(conns), exp.Connections)
			check("payload frames", payload, exp.PayloadFrames)
			check("checksummed payload frames", checksummed, exp.ChecksummedPayloadFrames)
			check("broker entry metadata frames", bem, exp.BrokerEntryMetadataFrames)
			check("batch entries", entries, exp.BatchEntries)
			check("chunk frames", chunks, exp.ChunkFrames)
			for _, dir := range []string{"c2s", "s2c"} {
				if !equalCounts(frames[dir], exp.Frames[dir]) {
					t.Errorf("%s frames by type:\n got %v\nwant %v", dir, frames[dir], exp.Frames[dir])
				}
			}
			var got []string
			for c := range problems {
				got = append(got, c)
			}
			sort.Strings(got)
			want := append([]string(nil), exp.ExpectProblems...)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("problem codes: got %v, want %v", got, want)
			}
		})
	}
}

// TestGoldenText compares the default text output of every capture with
// testdata/golden/NAME.txt (rewrite with: go test ./cli -run GoldenText -update),
// and checks it has one line per expected frame.
func TestGoldenText(t *testing.T) {
	for _, exp := range loadExpectations(t) {
		t.Run(exp.File, func(t *testing.T) {
			out, errOut, code := run(t, exp.args("text")...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			frameLines := 0
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if f := strings.Fields(l); len(f) > 0 && f[0] != "-" {
					frameLines++
				}
			}
			if frameLines != exp.FramesTotal {
				t.Errorf("text output has %d frame lines, want %d", frameLines, exp.FramesTotal)
			}
			golden := filepath.Join("../testdata/golden", exp.File+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (create it with -update)", err)
			}
			if out != string(want) {
				t.Errorf("text output differs from %s; run with -update if the change is intended:\n%s", golden, firstDiff(string(want), out))
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "line " + itoa(i+1) + ":\n want: " + al[i] + "\n  got: " + bl[i]
		}
	}
	return "lengths differ: want " + itoa(len(al)) + " lines, got " + itoa(len(bl))
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + jsonNumber(i)) }

func jsonNumber(i int) string { b, _ := json.Marshal(i); return string(b) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// shippedCaptures lists the captures committed in testdata/pcaps (pcap and
// pcapng, not their .expect.json files).
func shippedCaptures(tb testing.TB) []string {
	tb.Helper()
	all, err := filepath.Glob("../testdata/pcaps/*.pcap*")
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".json") {
			out = append(out, f)
		}
	}
	if err != nil || len(out) < 10 {
		tb.Fatalf("expected the lab's captures in testdata/pcaps, found %d (%v)", len(out), err)
	}
	return out
}
