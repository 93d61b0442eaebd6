package tui

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pulsarscope/pulsarscope/internal/secrettest"
)

// secretsModel loads the capture of every secret of the schema
// (secrettest) into a model tall enough to show a whole frame's hex.
func secretsModel(t *testing.T, show bool) (*Model, []string) {
	frames := secrettest.Frames()
	path := filepath.Join(t.TempDir(), "secrets.pcap")
	if err := os.WriteFile(path, secrettest.Capture(frames), 0o600); err != nil {
		t.Fatal(err)
	}
	src := &fileSource{path: path}
	s, err := newSession(src, Options{SpillDir: t.TempDir(), ShowSecrets: show})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	if err := src.Run(context.Background(), s.collector.sink()); err != nil {
		t.Fatal(err)
	}
	m := newModel(s, Options{NoColor: true, ShowSecrets: show})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 120})
	drain(m, func() tea.Msg { return loadDoneMsg{} })
	var all []string
	for _, f := range frames {
		all = append(all, f.Secrets...)
	}
	return m, all
}

// TestSecretsDetailAndHex opens the detail of every frame that carries a
// secret of the schema: no secret appears in the tree or the screen, and
// every byte of the frame that holds one is masked in the hex pane; with
// --show-secrets the tree shows every secret.
func TestSecretsDetailAndHex(t *testing.T) {
	for _, show := range []bool{false, true} {
		m, all := secretsModel(t, show)
		press(m, "enter")
		seen := map[string]bool{}
		for i := 0; i < m.view.len(); i++ {
			if m.det == nil {
				t.Fatalf("frame %d: no detail", i)
			}
			screen := screenText(m)
			for _, s := range all {
				if strings.Contains(screen, s) {
					seen[s] = true
					if !show {
						t.Errorf("frame %d (%s): secret %q on the screen", i+1, m.det.typ, s)
					}
				}
				if show {
					continue
				}
				for off := 0; ; {
					j := bytes.Index(m.det.raw[off:], []byte(s))
					if j < 0 {
						break
					}
					for b := off + j; b < off+j+len(s); b++ {
						if !covered(m.det.secrets, b) {
							t.Errorf("frame %d (%s): byte %d of secret %q not masked in the hex pane", i+1, m.det.typ, b, s)
							break
						}
					}
					off += j + len(s)
				}
			}
			press(m, "down")
		}
		for _, s := range all {
			if show && !seen[s] {
				t.Errorf("--show-secrets: secret %q not shown in any detail", s)
			}
		}
	}
}

func covered(rs [][2]int, b int) bool {
	for _, r := range rs {
		if b >= r[0] && b < r[1] {
			return true
		}
	}
	return false
}

// TestEscapesDetail: strings holding terminal control sequences, in every
// string field of every command, reach the screen escaped, in the
// timeline and in every frame's detail.
func TestEscapesDetail(t *testing.T) {
	frames := secrettest.HostileFrames(secrettest.Hostile)
	path := filepath.Join(t.TempDir(), "hostile.pcap")
	if err := os.WriteFile(path, secrettest.Capture(frames), 0o600); err != nil {
		t.Fatal(err)
	}
	m := loadModel(t, path, 200, 120)
	press(m, "enter")
	for i := 0; i < m.view.len(); i++ {
		// The screen's own styles (SGR) removed, nothing else: an OSC, BEL,
		// C1 or bidi override from the wire would stay.
		screen := sgr.ReplaceAllString(m.render(), "")
		if c := rawControl(screen); c != "" {
			t.Fatalf("frame %d (%s): the screen holds a raw %s", i+1, m.det.typ, c)
		}
		press(m, "down")
	}
}

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// rawControl names the first ESC, BEL or other C0 control but newline, DEL,
// C1 control or bidirectional override in s.
func rawControl(s string) string {
	for i, r := range s {
		if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\u202e' {
			return fmt.Sprintf("U+%04X at byte %d: %q", r, i, s[max(0, i-20):min(len(s), i+20)])
		}
	}
	return ""
}
