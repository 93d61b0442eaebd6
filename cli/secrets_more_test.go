package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsEveryOutput extends TestSecretsRedacted and TestDiffSecrets
// to every other output that can carry frame contents: two-pass and
// filtered reads, colored text, transcripts, diff text and JSON, stats and
// the -q summary; the token must appear in none of them (neither as text
// nor base64) unless --show-secrets, and then it must (where the output
// shows field values at all).
func TestSecretsEveryOutput(t *testing.T) {
	const token = "lab-token"
	const b64 = "bGFiLXRva2Vu" // base64 of "lab-token"
	auth := "../testdata/pcaps/auth.pcap"
	leaks := func(s string) bool { return strings.Contains(s, token) || strings.Contains(s, b64) }
	cases := []struct {
		args      []string
		showsData bool // the output shows field values (so --show-secrets must reveal the token)
	}{
		{[]string{"read", "-2", "-o", "json", auth}, true},
		{[]string{"read", "-2", "-V", auth}, true},
		{[]string{"read", "--color", "always", "-V", "-x", auth}, true},
		{[]string{"read", "-Y", `type in ["CONNECT", "AUTH_RESPONSE", "AUTH_CHALLENGE"]`, "-V", auth}, true},
		{[]string{"read", "-o", "json", "-x", "--payload", "--events", auth}, true},
		{[]string{"read", "-o", "transcript", auth}, true},
		{[]string{"diff", "-o", "json", auth, "../testdata/pcaps/basic.pcap"}, true},
		{[]string{"diff", "-U", "1000", auth, "../testdata/pcaps/basic.pcap"}, true},
		{[]string{"read", "-q", auth}, false},
		{[]string{"stats", auth}, false},
		{[]string{"stats", "-o", "json", auth}, false},
	}
	for _, c := range cases {
		out, errOut, code := run(t, c.args...)
		if code != ExitOK && !(c.args[0] == "diff" && code == ExitProblems) {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut)
		}
		if leaks(out) || leaks(errOut) {
			t.Errorf("%v: the token appears", c.args)
		}
		shown, _, _ := run(t, append([]string{c.args[0], "--show-secrets"}, c.args[1:]...)...)
		if c.showsData && !leaks(shown) {
			t.Errorf("%v --show-secrets: the token is not shown", c.args)
		}
	}
}

// TestSecretsUpdateFile: 'diff --update' writes a transcript without
// credentials unless --show-secrets; one with credentials is readable by
// its owner only (a redacted baseline is 0644, meant to be shared).
func TestSecretsUpdateFile(t *testing.T) {
	auth := "../testdata/pcaps/auth.pcap"
	for _, show := range []bool{false, true} {
		base := filepath.Join(t.TempDir(), "baseline.json")
		args := []string{"diff", "--update", base, auth}
		if show {
			args = []string{"diff", "--update", "--show-secrets", base, auth}
		}
		if _, errOut, code := run(t, args...); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		b, err := os.ReadFile(base)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "lab-token"); got != show {
			t.Errorf("--show-secrets=%v: token in the written transcript = %v", show, got)
		}
		fi, _ := os.Stat(base)
		if fi.Mode().Perm()&0o077 != 0 && show {
			t.Errorf("transcript with credentials, mode %v: readable by others", fi.Mode().Perm())
		}
	}
}
