package tui

import (
	"strings"
	"testing"
)

// TestSecrets checks that tokens never reach the screen (timeline, tree,
// hex) unless ShowSecrets.
func TestSecrets(t *testing.T) {
	const token = "lab-token"
	for _, show := range []bool{false, true} {
		m := loadModel(t, pcap("auth.pcap"), 140, 60)
		m.opts.ShowSecrets = show
		m.cache = newRowCache()
		press(m, "enter")
		seen := false
		for _, frame := range []int{1, 3, 5} {
			for cursorFrame(m) != frame {
				press(m, "j")
			}
			// Expand everything and select each field so that every byte
			// range is shown in hex.
			press(m, "tab")
			for i := 0; i < len(m.det.flat); i++ {
				press(m, "l", "j")
			}
			s := screenText(m)
			press(m, "tab", "tab")
			if strings.Contains(s, token) || strings.Contains(s, "lab-tok") {
				seen = true
				if !show {
					t.Errorf("frame %d shows the token:\n%s", frame, s)
				}
			}
			if !show && frame != 3 && !strings.Contains(s, "<redacted 65 bytes>") {
				t.Errorf("frame %d: no redaction marker:\n%s", frame, s)
			}
		}
		if show && !seen {
			t.Error("ShowSecrets: the token is not shown")
		}
	}
}
