package tui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// recorder keeps the decoded sequence (frames and events) of a capture.
type recorder struct {
	items []any
}

func (r *recorder) Frame(f *decode.Frame) { r.items = append(r.items, f) }
func (r *recorder) Event(e *decode.Event) { r.items = append(r.items, e) }

// liveFeed is a Source whose frames the test hands over in steps.
type liveFeed struct {
	items []any
	next  int
	drops uint64
}

func (l *liveFeed) Name() string                                 { return "lo" }
func (l *liveFeed) Live() bool                                   { return true }
func (l *liveFeed) Drops() uint64                                { return l.drops }
func (l *liveFeed) Run(ctx context.Context, _ decode.Sink) error { <-ctx.Done(); return nil }

// feed delivers the next n frames (and the events between them) to sink.
func (l *liveFeed) feed(sink decode.Sink, n int) {
	for ; l.next < len(l.items) && n > 0; l.next++ {
		switch it := l.items[l.next].(type) {
		case *decode.Frame:
			sink.Frame(it)
			n--
		case *decode.Event:
			sink.Event(it)
		}
	}
}

func record(t *testing.T, path string) []any {
	src, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	r := &recorder{}
	sd := decode.NewStreamDecoder(r, decode.Options{KeepRaw: true, Retain: true})
	if err := reassembly.New(sd, reassembly.Options{}).Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	return r.items
}

func TestLiveAppendFollowPause(t *testing.T) {
	feed := &liveFeed{items: record(t, pcap("basic.pcap")), drops: 7}
	s, err := newSession(feed, Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	m := newModel(s, Options{NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	sink := s.collector.sink()

	feed.feed(sink, 10)
	m.Update(tickMsg{})
	if m.view.len() != 10 || cursorFrame(m) != 10 {
		t.Fatalf("after 10 frames: view %d, cursor on %d; want 10, 10 (following)", m.view.len(), cursorFrame(m))
	}
	status := lineWith(m, "frames")
	if !strings.Contains(status, "LIVE") || !strings.Contains(status, "drops 7") {
		t.Errorf("status %q lacks LIVE or drops", status)
	}
	feed.feed(sink, 30)
	m.Update(tickMsg{})
	if cursorFrame(m) != 40 {
		t.Fatalf("following: cursor on %d, want 40", cursorFrame(m))
	}
	// Pause: the timeline stays as it is while frames keep coming.
	press(m, "space")
	feed.feed(sink, 10)
	m.Update(tickMsg{})
	if m.view.len() != 40 || !strings.Contains(lineWith(m, "PAUSED"), "PAUSED (+10)") {
		t.Fatalf("paused: view %d, status %q", m.view.len(), lineWith(m, "frames"))
	}
	press(m, "space")
	m.Update(tickMsg{})
	if m.view.len() != 50 || cursorFrame(m) != 50 {
		t.Fatalf("resumed: view %d cursor %d, want 50, 50", m.view.len(), cursorFrame(m))
	}
	// Moving up stops following; new frames then do not move the cursor.
	press(m, "k")
	feed.feed(sink, 5)
	m.Update(tickMsg{})
	if m.view.len() != 55 || cursorFrame(m) != 49 {
		t.Fatalf("not following: view %d cursor %d, want 55, 49", m.view.len(), cursorFrame(m))
	}
	// A filter keeps up with new frames.
	press(m, "f")
	typeText(m, `dir == "c2s"`)
	press(m, "enter")
	before := m.view.len()
	feed.feed(sink, 10)
	_, cmd := m.Update(tickMsg{})
	drainCmd(m, cmd)
	if m.view.len() <= before {
		t.Errorf("filtered view did not grow with new frames (%d)", m.view.len())
	}
	// G follows again.
	press(m, "G")
	feed.feed(sink, 10)
	_, cmd = m.Update(tickMsg{})
	drainCmd(m, cmd)
	if last := m.view.at(m.view.len() - 1); cursorFrame(m) != last+1 {
		t.Errorf("G: cursor on %d, want the last frame %d", cursorFrame(m), last+1)
	}
}

// TestConcurrentLoad renders while the source fills the index from another
// goroutine, as Run does (run with -race).
func TestConcurrentLoad(t *testing.T) {
	src := &fileSource{path: pcap("many.pcap")}
	s, err := newSession(src, Options{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	m := newModel(s, Options{NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	done := make(chan error, 1)
	go func() { done <- src.Run(context.Background(), s.collector.sink()) }()
	press(m, "enter")
	for loaded := false; !loaded; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			m.Update(loadDoneMsg{})
			loaded = true
		default:
		}
		_, cmd := m.Update(tickMsg{})
		drainCmd(m, cmd)
		_ = m.render()
		press(m, "j", "3")
		_ = m.render()
		press(m, "1")
	}
	if m.view.len() != 590 {
		t.Errorf("view has %d frames, want 590", m.view.len())
	}
}
