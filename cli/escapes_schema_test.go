package cli

import (
	"strings"
	"testing"

	"github.com/pulsarscope/pulsarscope/internal/secrettest"
)

// rawControl names the first byte sequence in s that would drive a
// terminal: a C0 control other than tab and newline (ESC, BEL), DEL, a C1
// control (U+0080..U+009F, as UTF-8), or a bidirectional override; "" when
// there is none.
func rawControl(s string) string {
	for i, r := range s {
		switch {
		case r < 0x20 && r != '\n' && r != '\t':
			return "C0 " + itoa(int(r)) + " at " + itoa(i)
		case r == 0x7f:
			return "DEL at " + itoa(i)
		case r >= 0x80 && r <= 0x9f:
			return "C1 at " + itoa(i)
		case r == '\u202e':
			return "bidi override at " + itoa(i)
		}
	}
	return ""
}

// TestEscapesEveryStringField puts terminal control sequences (secrettest.
// Hostile) into every string field of every command of the schema, of the
// message metadata and of a batch entry, and reads the capture through
// every output: none may write them raw (they are escaped, and the escaped
// form is shown).
func TestEscapesEveryStringField(t *testing.T) {
	frames := secrettest.HostileFrames(secrettest.Hostile)
	name := writeTemp(t, "hostile-strings.pcap", secrettest.Capture(frames))
	baseline := "../testdata/pcaps/basic.pcap"
	for _, args := range [][]string{
		{"read", name},
		{"read", "-V", name},
		{"read", "-V", "-x", "--payload", "--events", name},
		{"read", "-2", "-V", name},
		{"read", "-o", "json", "--payload", "--events", name},
		{"read", "-o", "transcript", name},
		{"read", "-Y", `topic contains "RED"`, name},
		{"diff", "-U", "1000", baseline, name},
		{"diff", "-o", "json", baseline, name},
		{"diff", "-U", "1000", name, baseline},
		{"stats", name},
		{"stats", "-o", "json", name},
		{"read", "-Y", "\x1b]0;title\x07 ==", name}, // an error message quoting the filter
	} {
		out, errOut, code := run(t, args...)
		if code != ExitOK && code != ExitProblems && code != ExitUsage {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if c := rawControl(out); c != "" {
			t.Errorf("%v: stdout writes a raw %s", args, c)
		}
		if c := rawControl(errOut); c != "" {
			t.Errorf("%v: stderr writes a raw %s", args, c)
		}
		if code == ExitUsage {
			continue
		}
		if !strings.Contains(out, `\x1b`) && !strings.Contains(out, `\u001b`) {
			t.Errorf("%v: the escaped strings are not shown", args)
		}
	}
}
