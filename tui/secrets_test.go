package tui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
