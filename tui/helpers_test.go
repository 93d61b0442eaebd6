package tui

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

var update = flag.Bool("update", false, "rewrite the golden screens in testdata")

// fileSource decodes a capture file like the CLI does (capture →
// reassembly → decode with KeepRaw).
type fileSource struct {
	path string
	live bool
}

func (s *fileSource) Name() string  { return filepath.Base(s.path) }
func (s *fileSource) Live() bool    { return s.live }
func (s *fileSource) Drops() uint64 { return 0 }

func (s *fileSource) Run(ctx context.Context, sink decode.Sink) error {
	src, err := capture.Open(s.path)
	if err != nil {
		return err
	}
	defer src.Close()
	sd := decode.NewStreamDecoder(sink, decode.Options{KeepRaw: true, LazyEntryMetadata: true})
	return reassembly.New(sd, reassembly.Options{}).Run(ctx, src)
}

func pcap(name string) string { return filepath.Join("..", "testdata", "pcaps", name) }

// loadModel decodes a capture completely and returns a model of w×h on it.
func loadModel(tb testing.TB, path string, w, h int) *Model {
	tb.Helper()
	src := &fileSource{path: path}
	s, err := newSession(src, Options{SpillDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.close)
	if err := src.Run(context.Background(), s.collector.sink()); err != nil {
		tb.Fatalf("decoding %s: %v", path, err)
	}
	m := newModel(s, Options{NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	drain(m, func() tea.Msg { return loadDoneMsg{} })
	return m
}

// keyMsg turns a key name ("enter", "down", "j", "G") into a key press.
func keyMsg(k string) tea.KeyPressMsg {
	special := map[string]rune{
		"enter": tea.KeyEnter, "down": tea.KeyDown, "up": tea.KeyUp, "tab": tea.KeyTab, "esc": tea.KeyEscape,
		"pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp, "home": tea.KeyHome, "end": tea.KeyEnd,
		"left": tea.KeyLeft, "right": tea.KeyRight, "backspace": tea.KeyBackspace,
	}
	if c, ok := special[k]; ok {
		return tea.KeyPressMsg{Code: c}
	}
	if k == "space" {
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// press sends keys, running the commands they return (filter scans, searches).
func press(m *Model, keys ...string) {
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		drainCmd(m, cmd)
	}
}

// typeText types text into the input line.
func typeText(m *Model, text string) {
	for _, r := range text {
		_, cmd := m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
		drainCmd(m, cmd)
	}
}

func drain(m *Model, cmd tea.Cmd) {
	drainCmd(m, cmd)
}

// drainCmd runs cmd and feeds the model the scan and search results and
// load messages it produces; timers (ticks, cursor blink) are dropped.
func drainCmd(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-ch:
	case <-time.After(50 * time.Millisecond):
		return // a timer
	}
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			drainCmd(m, c)
		}
	case scanMsg, searchMsg, loadDoneMsg:
		_, next := m.Update(msg)
		drainCmd(m, next)
	}
}

// screenText returns the model's screen without escape sequences.
func screenText(m *Model) string { return ansi.Strip(m.render()) }

// golden compares the screen with testdata/NAME.golden.
func golden(t *testing.T, name string, m *Model) {
	t.Helper()
	got := screenText(m) + "\n"
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -run %s -update)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("screen %s differs from %s (rerun with -update if intended):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// cursorFrame returns the frame number (1-based) under the cursor.
func cursorFrame(m *Model) int {
	if m.view.len() == 0 {
		return 0
	}
	return m.view.at(m.cur) + 1
}

// lineWith returns the first screen line containing s.
func lineWith(m *Model, s string) string {
	for _, l := range strings.Split(screenText(m), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
