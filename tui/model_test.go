package tui

import (
	"strings"
	"testing"
	"unsafe"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

func TestRowSize(t *testing.T) {
	if n := unsafe.Sizeof(row{}); n > 64 {
		t.Fatalf("index row is %d bytes, want ≤ 64", n)
	}
}

func TestTimelineFirstScreen(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 120, 30)
	if m.view.len() != 65 {
		t.Fatalf("view has %d frames, want 65", m.view.len())
	}
	golden(t, "timeline-basic-120x30", m)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	golden(t, "timeline-basic-80x24", m)
}

func TestDetailAndHex(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 80, 24)
	for cursorFrame(m) != 18 {
		press(m, "j")
	}
	press(m, "enter")
	if m.det == nil || m.det.typ != "SEND" {
		t.Fatalf("detail = %+v, want SEND", m.det)
	}
	s := screenText(m)
	for _, want := range []string{"producer_id: 1", "sequence_id: 0", "0000  00 00 00 58"} {
		if !strings.Contains(s, want) {
			t.Errorf("detail screen lacks %q:\n%s", want, s)
		}
	}
	golden(t, "detail-send-80x24", m)
	// Select the send sub-command's producer_id: its bytes are shown.
	press(m, "tab")
	for m.det.selected() == nil || !strings.HasPrefix(m.det.selected().label, "producer_id") {
		press(m, "j")
		if m.det.sel == len(m.det.flat)-1 {
			t.Fatal("producer_id not found in the tree")
		}
	}
	if n := m.det.selected(); n.start != 12 || n.end != 14 {
		t.Errorf("producer_id bytes = %d..%d, want 12..14", n.start, n.end)
	}
	if !strings.Contains(screenText(m), "selected 12..14 (2 bytes)") {
		t.Errorf("hex title does not show the selection:\n%s", screenText(m))
	}
	// Collapse the command.
	for !strings.HasPrefix(m.det.selected().label, "Command:") {
		press(m, "k")
	}
	before := len(m.det.flat)
	press(m, "h")
	if len(m.det.flat) >= before {
		t.Errorf("collapsing did not hide fields (%d → %d)", before, len(m.det.flat))
	}
	press(m, "l")
	if len(m.det.flat) != before {
		t.Errorf("expanding gave %d lines, want %d", len(m.det.flat), before)
	}
}

func TestFilter(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	press(m, "f")
	typeText(m, `type == "SEN`)
	if m.inputErr == "" {
		t.Error("no error shown for an unfinished filter")
	}
	golden(t, "filter-typing-error", m)
	typeText(m, `D"`)
	if m.inputErr != "" {
		t.Errorf("error %q for a valid filter", m.inputErr)
	}
	press(m, "enter")
	if m.view.len() != 10 {
		t.Fatalf("filter kept %d frames, want 10", m.view.len())
	}
	for p := 0; p < m.view.len(); p++ {
		if typ := m.x.at(m.view.at(p)).cmdType(); typ != pulsarapi.BaseCommand_SEND {
			t.Errorf("row %d is %s", p, typ)
		}
	}
	golden(t, "filter-send", m)
	press(m, "esc")
	if m.view.len() != 65 {
		t.Errorf("esc left %d frames, want 65", m.view.len())
	}
}

func TestFilterOnPairs(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	press(m, "f")
	typeText(m, `request == "SEND" && latency_us >= 0`)
	press(m, "enter")
	if m.view.len() != 10 {
		t.Fatalf("filter on pairs kept %d frames, want the 10 SEND_RECEIPTs", m.view.len())
	}
}

func TestJumpToPair(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	for cursorFrame(m) != 18 {
		press(m, "j")
	}
	press(m, "p")
	if got := cursorFrame(m); got != 19 {
		t.Fatalf("pair of frame 18 (SEND) is %d, want 19 (SEND_RECEIPT)", got)
	}
	press(m, "p")
	if got := cursorFrame(m); got != 18 {
		t.Fatalf("pair of frame 19 is %d, want 18", got)
	}
	press(m, "g", "j", "j", "j") // FLOW has no pair... frame 4 has
	press(m, "p")
	if got := cursorFrame(m); got != 3 {
		t.Errorf("pair of frame 4 is %d, want 3", got)
	}
}

func TestSearch(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	press(m, "/")
	typeText(m, "KEY-2")
	press(m, "enter")
	first := cursorFrame(m)
	if first != 24 {
		t.Fatalf("search for key-2 found frame %d, want 24", first)
	}
	press(m, "n")
	if got := cursorFrame(m); got != 26 {
		t.Errorf("n found %d, want 26", got)
	}
	press(m, "N")
	if got := cursorFrame(m); got != 24 {
		t.Errorf("N found %d, want 24", got)
	}
	press(m, "/")
	typeText(m, "no-such-thing")
	press(m, "enter")
	if !strings.Contains(m.message, "not found") {
		t.Errorf("message = %q", m.message)
	}
}

func TestFollowConnectionAndEntity(t *testing.T) {
	m := loadModel(t, pcap("many.pcap"), 120, 30)
	press(m, "G")
	conn := m.x.at(m.view.at(m.cur)).conn
	press(m, "c")
	if m.view.len() == 0 || m.view.len() == m.x.Len() {
		t.Fatalf("following conn %d shows %d of %d frames", conn, m.view.len(), m.x.Len())
	}
	for p := 0; p < m.view.len(); p++ {
		if c := m.x.at(m.view.at(p)).conn; c != conn {
			t.Fatalf("row %d is on conn %d, want %d", p, c, conn)
		}
	}
	press(m, "esc")
	// A SEND names its producer.
	for m.x.at(m.view.at(m.cur)).cmdType() != pulsarapi.BaseCommand_SEND {
		press(m, "k")
	}
	ent := m.x.at(m.view.at(m.cur)).entity
	press(m, "e")
	if m.view.len() < 2 {
		t.Fatalf("following the producer shows %d frames", m.view.len())
	}
	for p := 0; p < m.view.len(); p++ {
		if e := m.x.at(m.view.at(p)).entity; e != ent {
			t.Fatalf("row %d has entity %d, want %d", p, e, ent)
		}
	}
	if !strings.Contains(screenText(m), "filter: producer") {
		t.Errorf("status does not name the producer:\n%s", lineWith(m, "filter"))
	}
}

func TestMarks(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	press(m, "j", "j", "m", "j", "j", "j", "j", "m", "g", "'")
	if got := cursorFrame(m); got != 3 {
		t.Errorf("first mark: %d, want 3", got)
	}
	press(m, "'")
	if got := cursorFrame(m); got != 7 {
		t.Errorf("next mark: %d, want 7", got)
	}
	press(m, "\"")
	if got := cursorFrame(m); got != 3 {
		t.Errorf("previous mark: %d, want 3", got)
	}
	if !strings.HasPrefix(lineWith(m, "LOOKUP  "), "*") {
		t.Errorf("mark not shown: %q", lineWith(m, "LOOKUP  "))
	}
}

func TestTimeFormats(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	press(m, "t")
	if !strings.Contains(screenText(m), "Time (abs)") {
		t.Error("t did not switch to absolute time")
	}
	press(m, "t")
	if !strings.Contains(screenText(m), "Delta") {
		t.Error("t did not switch to delta time")
	}
	press(m, "t")
	if !strings.Contains(screenText(m), " Time ") {
		t.Error("t did not switch back to relative time")
	}
}

func TestViews(t *testing.T) {
	m := loadModel(t, pcap("many.pcap"), 120, 20)
	press(m, "2")
	golden(t, "connections-many", m)
	press(m, "j", "enter")
	if m.screen != screenTimeline || !m.filter.active() || m.filter.pred.label != "conn == 2" {
		t.Errorf("enter on connection 2: screen %d filter %+v", m.screen, m.filter.pred)
	}
	press(m, "3")
	golden(t, "stats-many", m)
	if !strings.Contains(screenText(m), "PRODUCER") {
		t.Error("SRT table lacks PRODUCER")
	}
	press(m, "?")
	golden(t, "help", m)
	press(m, "x")
	if m.screen != screenStats {
		t.Errorf("closing help went to screen %d", m.screen)
	}
}

func TestProblemsView(t *testing.T) {
	m := loadModel(t, pcap("basic-corrupt.pcap"), 120, 20)
	press(m, "4")
	golden(t, "problems-corrupt", m)
	ps := m.x.problemRange(0, m.x.problemCount())
	if len(ps) == 0 {
		t.Fatal("no problems in basic-corrupt.pcap")
	}
	press(m, "enter")
	if m.screen != screenTimeline || cursorFrame(m) != int(ps[0].frame)+1 {
		t.Errorf("enter on the first problem: screen %d frame %d, want frame %d", m.screen, cursorFrame(m), ps[0].frame+1)
	}
	if !strings.HasPrefix(strings.TrimLeft(lineWith(m, " #1 "), " "), "!") && !strings.Contains(screenText(m), "!") {
		t.Error("no problem marker on the timeline")
	}
	press(m, "1", "!")
	if m.view.len() == 0 {
		t.Error("! shows no frames")
	}
}

func TestResizeAndSmallScreens(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 80, 24)
	press(m, "enter")
	for _, sz := range [][2]int{{80, 24}, {60, 15}, {200, 50}, {40, 8}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		lines := strings.Split(m.render(), "\n")
		if len(lines) != sz[1] {
			t.Errorf("%dx%d: %d lines", sz[0], sz[1], len(lines))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > sz[0] {
				t.Errorf("%dx%d: line %d is %d wide", sz[0], sz[1], i, w)
			}
		}
	}
}

func TestNoColor(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	press(m, "enter")
	out := m.render()
	for _, sgr := range []string{"\x1b[3", "\x1b[9", "38;", "\x1b[4"} {
		if strings.Contains(out, sgr+"1m") || strings.Contains(out, sgr+"2m") || strings.Contains(out, "38;5") {
			t.Fatalf("NoColor output has color escape %q", sgr)
		}
	}
	mc := newModel(m.s, Options{})
	mc.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	mc.refresh()
	if !strings.Contains(mc.render(), "\x1b[3") {
		t.Error("color output has no colors")
	}
}

func TestMouse(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	m.Update(tea.MouseClickMsg{X: 10, Y: 6, Button: tea.MouseLeft})
	if got := cursorFrame(m); got != 5 {
		t.Errorf("click on screen line 6 selected %d, want 5", got)
	}
	m.Update(tea.MouseWheelMsg{X: 10, Y: 6, Button: tea.MouseWheelDown})
	if got := cursorFrame(m); got != 8 {
		t.Errorf("wheel down: %d, want 8", got)
	}
	title := screenText(m)[:100]
	m.Update(tea.MouseClickMsg{X: strings.Index(title, "4 Problems") + 2, Y: 0, Button: tea.MouseLeft})
	if m.screen != screenProblems {
		t.Errorf("click on the Problems tab: screen %d", m.screen)
	}
	m.Update(tea.MouseClickMsg{X: strings.Index(title, "1 Timeline") + 2, Y: 0, Button: tea.MouseLeft})
	if m.screen != screenTimeline {
		t.Errorf("click on the Timeline tab: screen %d", m.screen)
	}
}

func TestQuit(t *testing.T) {
	m := loadModel(t, pcap("basic.pcap"), 100, 30)
	_, cmd := m.Update(keyMsg("q"))
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q does not quit")
	}
}
