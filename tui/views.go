package tui

import (
	"fmt"
	"strings"
)

// listLen returns the number of rows of the current list view.
func (m *Model) listLen() int {
	switch m.screen {
	case screenConns:
		return m.x.connCount()
	case screenProblems:
		return m.x.problemCount()
	}
	return 0
}

// listLines renders a list view: a header line and h-1 rows, formatting
// only the rows on screen.
func (m *Model) listLines(h int) []string {
	var head string
	var format func(from, to int) []string
	switch m.screen {
	case screenConns:
		head = fmt.Sprintf("%5s  %-47s %8s %10s %8s  %s", "Conn", "Client → Server", "Frames", "Bytes", "Problems", "State")
		format = func(from, to int) []string {
			var rows []string
			for _, c := range m.x.connRange(from, to) {
				state := "open"
				if c.closed != "" {
					state = c.closed
				}
				if c.conn.TLS {
					state += " (TLS)"
				}
				ends := fmt.Sprintf("%s → %s", c.conn.Client, c.conn.Server)
				rows = append(rows, fmt.Sprintf("%5s  %-47s %8d %10s %8d  %s", fmt.Sprintf("#%d", c.conn.ID), ends, c.frames, fmtBytes(c.bytes), c.problems, state))
			}
			return rows
		}
	case screenProblems:
		head = fmt.Sprintf("%8s %5s  %-28s %s", "Frame", "Conn", "Problem", "Detail")
		format = func(from, to int) []string {
			var rows []string
			for _, p := range m.x.problemRange(from, to) {
				fr := "-"
				if p.frame >= 0 {
					fr = fmt.Sprint(p.frame + 1)
					if !p.onFrame {
						fr = "after " + fr
					}
				}
				rows = append(rows, fmt.Sprintf("%8s %5s  %-28s %s", fr, fmt.Sprintf("#%d", p.conn), p.problem.Code, oneLine(p.problem.Detail)))
			}
			return rows
		}
	}
	out := []string{m.st.header.Render(fit(head, m.w))}
	n := m.listLen()
	if n == 0 {
		return append(out, m.st.dim.Render("(nothing yet)"))
	}
	m.listCur = max(0, min(m.listCur, n-1))
	body := h - 1
	if m.listCur < m.listTop {
		m.listTop = m.listCur
	}
	if m.listCur >= m.listTop+body {
		m.listTop = m.listCur - body + 1
	}
	for k, row := range format(m.listTop, min(n, m.listTop+body)) {
		line := fit(row, m.w)
		if m.listTop+k == m.listCur {
			line = m.st.cursor.Render(line)
		}
		out = append(out, line)
	}
	return out
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// helpLines renders the help screen, wrapping descriptions to the width.
func (m *Model) helpLines() []string {
	const keyW = 18
	var out []string
	for _, s := range helpSections() {
		out = append(out, m.st.header.Render(s.title))
		for _, k := range s.keys {
			first := fmt.Sprintf("  %-*s ", keyW, k.keys)
			if len(k.keys) > keyW {
				out = append(out, fit("  "+k.keys, m.w))
				first = strings.Repeat(" ", keyW+3)
			}
			for i, l := range wrap(k.what, max(20, m.w-keyW-3)) {
				if i > 0 {
					first = strings.Repeat(" ", keyW+3)
				}
				out = append(out, fit(first+l, m.w))
			}
		}
	}
	return out
}

// wrap splits s into lines of at most w characters at spaces.
func wrap(s string, w int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > w {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(out, line)
}
