package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestTUIArgs checks what 'tui' reports before taking over the terminal
// (the screen itself is tested in tui/, end to end in tmux).
func TestTUIArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"tui"}, ExitUsage, "accepts 1 arg"},
		{[]string{"tui", "a.pcap", "b.pcap"}, ExitUsage, "accepts 1 arg"},
		{[]string{"tui", "--max-frame-size", "x", "a.pcap"}, ExitUsage, "--max-frame-size"},
		{[]string{"tui", "../testdata/pcaps/no-such.pcap"}, ExitInput, "check the path"},
	} {
		var o, e bytes.Buffer
		code := Main(tc.args, strings.NewReader(""), &o, &e)
		if code != tc.code || !strings.Contains(e.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, e.String(), tc.code, tc.msg)
		}
	}
}
