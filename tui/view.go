package tui

import (
	"fmt"
	"strings"

	"github.com/pulsarscope/pulsarscope/render"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// View renders the whole window.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "pulsarscope " + m.s.src.Name()
	return v
}

// render returns the screen as text, exactly h lines of at most w cells.
func (m *Model) render() string {
	lines := make([]string, 0, m.h)
	lines = append(lines, m.titleBar())
	body := m.h - 2
	switch m.screen {
	case screenTimeline:
		lines = append(lines, m.header())
		l := m.layout()
		lines = append(lines, m.timelineLines(l.rows)...)
		if m.detailOpen {
			lines = append(lines, m.paneTitle("Detail", m.detailTitle(), m.focus == focusDetail))
			lines = append(lines, m.detailLines(l.detail)...)
			lines = append(lines, m.paneTitle("Hex", m.hexTitle(), m.focus == focusHex))
			lines = append(lines, m.hexLines(l.hex)...)
		}
	case screenHelp, screenStats:
		var hl []string
		if m.screen == screenHelp {
			hl = m.helpLines()
		} else {
			m.refreshReport()
			hl = m.statsLines()
		}
		m.listTop = max(0, min(m.listTop, len(hl)-body))
		end := min(len(hl), m.listTop+body)
		lines = append(lines, hl[m.listTop:end]...)
	default:
		lines = append(lines, m.listLines(body)...)
	}
	for len(lines) < m.h-1 {
		lines = append(lines, "")
	}
	lines = lines[:m.h-1]
	lines = append(lines, m.statusLine())
	return strings.Join(lines, "\n")
}

// tab is one screen in the title bar.
type tab struct {
	s    screen
	name string
}

// tabs returns the title bar's screens, in order.
func tabs() [4]tab {
	return [...]tab{{screenTimeline, "1 Timeline"}, {screenConns, "2 Connections"}, {screenStats, "3 Statistics"}, {screenProblems, "4 Problems"}}
}

// titlePrefix starts the title bar; each tab then takes len(name)+3 cells.
const titlePrefix = " pulsarscope  "

// tabAt returns the screen whose tab is at column x of the title bar.
func tabAt(x int) (screen, bool) {
	pos := len(titlePrefix)
	for _, t := range tabs() {
		w := len(t.name) + 3
		if x >= pos && x < pos+w {
			return t.s, true
		}
		pos += w
	}
	return 0, false
}

func (m *Model) titleBar() string {
	var b strings.Builder
	b.WriteString(titlePrefix)
	for _, t := range tabs() {
		if t.s == m.screen {
			b.WriteString("[" + t.name + "] ")
		} else {
			b.WriteString(" " + t.name + "  ")
		}
	}
	b.WriteString(" ? help")
	return m.st.title.Render(fit(b.String(), m.w))
}

func (m *Model) paneTitle(name, info string, focused bool) string {
	s := "── " + name + " "
	if focused {
		s = "━━ " + name + " "
	}
	if info != "" {
		s += "── " + info + " "
	}
	n := ansi.StringWidth(s)
	if n < m.w {
		s += strings.Repeat("─", m.w-n)
	}
	return m.st.dim.Render(ansi.Truncate(s, m.w, ""))
}

func (m *Model) detailTitle() string {
	if m.det == nil {
		return ""
	}
	return fmt.Sprintf("frame %d %s", m.det.frame+1, m.det.typ)
}

func (m *Model) hexTitle() string {
	d := m.det
	if d == nil {
		return ""
	}
	s := fmt.Sprintf("%d bytes", len(d.raw))
	if n := d.selected(); n != nil && n.start >= 0 {
		s += fmt.Sprintf(", selected %d..%d (%d bytes)", n.start, n.end, n.end-n.start)
		for _, r := range d.regions {
			if n.start >= r.Start && n.start < r.End && n.end-n.start < len(d.raw) {
				s += " in " + r.Name
				break
			}
		}
	}
	return s
}

// statusLine is the input line while typing, else the status bar.
func (m *Model) statusLine() string {
	if m.inputKind != inputNone {
		prompt := "filter: "
		if m.inputKind == inputSearch {
			prompt = "search: "
		}
		s := prompt + m.input.View()
		if m.inputErr != "" {
			s += "  " + m.st.inputErr.Render("✗ "+m.inputErr)
		} else if m.inputKind == inputFilter && m.input.Value() != "" {
			s += "  ✓"
		}
		return fit(s, m.w)
	}
	frames, bytes, probs := m.x.totals()
	parts := []string{m.s.src.Name()}
	if m.view.filtered {
		parts = append(parts, fmt.Sprintf("%d/%d frames", m.view.len(), frames))
	} else {
		parts = append(parts, fmt.Sprintf("%d frames", frames))
	}
	parts = append(parts, fmtBytes(bytes), fmt.Sprintf("%d problems", probs))
	if m.s.src.Live() {
		parts = append(parts, fmt.Sprintf("drops %d", m.drops))
	}
	switch {
	case m.paused:
		parts = append(parts, fmt.Sprintf("PAUSED (+%d)", frames-m.pausedAt))
	case m.s.src.Live() && !m.loaded:
		parts = append(parts, "LIVE")
	case !m.loaded:
		parts = append(parts, "loading…")
	case m.loadErr != nil:
		parts = append(parts, "error: "+render.Safe(m.loadErr.Error()))
	}
	if m.filter.active() {
		f := "filter: " + render.Safe(m.filter.pred.label)
		if m.filter.scanning || m.filter.scanned < m.visibleFrames() {
			f += fmt.Sprintf(" (%d%%)", 100*m.filter.scanned/max(1, m.visibleFrames()))
		}
		parts = append(parts, f)
	}
	if len(m.marks) > 0 {
		parts = append(parts, fmt.Sprintf("%d marked", len(m.marks)))
	}
	if m.message != "" {
		parts = append(parts, m.message)
	}
	return m.st.status.Render(fit(" "+strings.Join(parts, " │ "), m.w))
}
