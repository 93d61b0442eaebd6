package cli

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pulsarscope/pulsarscope/internal/secrettest"
)

// secretsCapture writes a capture of one connection carrying every frame of
// secrettest.Frames: every secret field of the schema, each with its own
// marker, and credentials by shape in ordinary strings.
func secretsCapture(t *testing.T) (string, []secrettest.Frame) {
	frames := secrettest.Frames()
	return writeTemp(t, "secrets.pcap", secrettest.Capture(frames)), frames
}

var hexDumpLine = regexp.MustCompile(`^([0-9a-f]{8})  ((?:[0-9a-f]{2} {1,2}){1,16})`)

// hexDumped returns the bytes of every hex.Dump block in out, concatenated
// (the frames of -x), so that a secret split over two dump lines is found.
func hexDumped(out string) []byte {
	var b []byte
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		m := hexDumpLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		raw, _ := hex.DecodeString(strings.ReplaceAll(m[2], " ", ""))
		b = append(b, raw...)
	}
	return b
}

// shows reports the forms in which out shows s: as text, as base64 (how
// JSON writes bytes fields), as hex digits, or in hex-dumped bytes.
func shows(out string, dumped []byte, s string) string {
	switch {
	case strings.Contains(out, s):
		return "text"
	case strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(s))):
		return "base64"
	case strings.Contains(out, hex.EncodeToString([]byte(s))):
		return "hex digits"
	case strings.Contains(string(dumped), s):
		return "hex dump"
	}
	return ""
}

// TestSecretsEverySchemaField: a frame for each secret-carrying
// sub-command of the schema, with a distinct marker in every secret field
// (nested ones too), and credentials by shape in an error message, a
// producer name and a message property, read through every output. No
// marker may appear, as text, base64, hex digits or hex-dumped bytes,
// unless --show-secrets is given; then every marker an output shows values
// for must appear.
func TestSecretsEverySchemaField(t *testing.T) {
	name, frames := secretsCapture(t)
	var all []string
	for _, f := range frames {
		all = append(all, f.Secrets...)
	}
	if len(frames) < 8 || len(all) < 8 {
		t.Fatalf("only %d frames and %d secrets built from the schema", len(frames), len(all))
	}
	baseline := "../testdata/pcaps/basic.pcap"
	cases := []struct {
		args []string
		// values: with --show-secrets the output shows every secret;
		// names: only those in names (stats).
		values, names bool
	}{
		{[]string{"read", name}, true, true},
		{[]string{"read", "-V", name}, true, true},
		{[]string{"read", "-x", name}, true, true},
		{[]string{"read", "-V", "-x", "--payload", "--events", name}, true, true},
		{[]string{"read", "--color", "always", "-V", "-x", name}, true, true},
		{[]string{"read", "-2", "-V", name}, true, true},
		{[]string{"read", "-o", "json", name}, true, true},
		{[]string{"read", "-o", "json", "-x", "--payload", "--events", name}, true, true},
		{[]string{"read", "-o", "transcript", name}, true, true},
		{[]string{"read", "-Y", `size > 0`, "-V", name}, true, true},
		{[]string{"diff", "-U", "1000", baseline, name}, true, true},
		{[]string{"diff", "-o", "json", baseline, name}, true, true},
		{[]string{"stats", name}, false, true},
		{[]string{"stats", "-o", "json", name}, false, true},
		{[]string{"read", "-q", name}, false, false},
	}
	for _, c := range cases {
		out, errOut, code := run(t, c.args...)
		if code != ExitOK && !(c.args[0] == "diff" && code == ExitProblems) {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut)
		}
		dumped := hexDumped(out)
		for _, s := range all {
			if how := shows(out+errOut, dumped, s); how != "" {
				t.Errorf("%v: secret %q shown (%s)", c.args, s, how)
			}
		}
		if joined := strings.Join(c.args, " "); len(dumped) == 0 && strings.Contains(joined, "-x") && !strings.Contains(joined, "json") {
			t.Errorf("%v: no hex dump found in the output", c.args)
		}
		shown, errOut, code := run(t, append([]string{c.args[0], "--show-secrets"}, c.args[1:]...)...)
		if code != ExitOK && !(c.args[0] == "diff" && code == ExitProblems) {
			t.Fatalf("%v --show-secrets: exit %d: %s", c.args, code, errOut)
		}
		sd := hexDumped(shown)
		for _, f := range frames {
			for _, s := range f.Secrets {
				want := c.values || (c.names && s == secrettest.Bearer)
				// transcripts renumber producer names (diff's default
				// rules), so the one in a producer name is not shown
				if s == secrettest.Bearer && (c.args[0] == "diff" || strings.Contains(strings.Join(c.args, " "), "transcript")) {
					want = false
				}
				if got := shows(shown, sd, s); want && got == "" {
					t.Errorf("%v --show-secrets: %s's secret %q is not shown", c.args, f.Name, s)
				}
			}
		}
	}
}

// TestSecretsFilter: a display filter can test that a secret is present
// and its length, never its value, unless --show-secrets.
func TestSecretsFilter(t *testing.T) {
	name, frames := secretsCapture(t)
	var connect secrettest.Frame
	for _, f := range frames {
		if f.Name == "connect" {
			connect = f
		}
	}
	if len(connect.Secrets) == 0 {
		t.Fatal("no CONNECT with secrets built")
	}
	auth := connect.Secrets[0] // auth_data: the first secret field of CommandConnect
	count := func(args ...string) int {
		out, errOut, code := run(t, append([]string{"read"}, append(args, name)...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return strings.Count(out, "CONNECT ")
	}
	byValue := `type == "CONNECT" && cmd.auth_data == "` + auth + `"`
	byLength := `type == "CONNECT" && len(cmd.auth_data) == ` + itoa(len(auth))
	if n := count("-Y", byValue); n != 0 {
		t.Errorf("-Y %s matched %d frames without --show-secrets", byValue, n)
	}
	if n := count("-Y", byLength); n != 1 {
		t.Errorf("-Y %s matched %d frames, want 1 (the length is visible)", byLength, n)
	}
	if n := count("-Y", `type == "CONNECT" && "auth_data" in cmd`); n != 1 {
		t.Errorf("presence: matched %d frames, want 1", n)
	}
	if n := count("--show-secrets", "-Y", byValue); n != 1 {
		t.Errorf("--show-secrets -Y %s matched %d frames, want 1", byValue, n)
	}
}

// TestSecretsDiffUpdateMode: a transcript written with secrets is created
// 0600 and holds them; one written without holds none and is 0644.
func TestSecretsDiffUpdateMode(t *testing.T) {
	name, frames := secretsCapture(t)
	for _, show := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "golden.json")
		args := []string{"diff", "--update", path, name}
		if show {
			args = []string{"diff", "--update", "--show-secrets", path, name}
		}
		if _, errOut, code := run(t, args...); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			for _, s := range f.Secrets {
				if s == secrettest.Bearer && show {
					continue // in a producer name, which transcripts renumber
				}
				if got := shows(string(b), nil, s) != ""; got != show {
					t.Errorf("--show-secrets=%v: %s's secret %q in the file: %v", show, f.Name, s, got)
				}
			}
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); show && perm != 0o600 || !show && perm&0o077 == 0 {
			t.Errorf("--show-secrets=%v: mode %v", show, perm)
		}
	}
}
