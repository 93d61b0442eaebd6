package tui

import (
	"bytes"

	tea "charm.land/bubbletea/v2"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/render"
)

// searchState is the last search and whether one is running.
type searchState struct {
	text    string
	gen     int
	running bool
}

// searchMsg is a search's result: the frame found, or -1.
type searchMsg struct {
	gen   int
	frame int
}

// rowText is what a search looks in: the command type, the identifying
// fields and the problem codes of frame i.
func rowText(dst []byte, f *decode.Frame, showSecrets bool) []byte {
	dst = append(dst, f.Type.String()...)
	dst = append(dst, ' ')
	dst = render.AppendSummary(dst, f, showSecrets)
	for _, p := range f.Problems {
		dst = append(dst, ' ')
		dst = append(dst, p.Code...)
	}
	return dst
}

// searchCmd looks for text among the view's frames, from position start
// in direction dir (+1, -1), wrapping around once.
func searchCmd(x *Index, decOpts decode.Options, v viewList, start, dir int, text string, showSecrets bool, gen int) tea.Cmd {
	needle := bytes.ToLower([]byte(text))
	return func() tea.Msg {
		dec := decode.NewDecoder(decOpts)
		var buf, line []byte
		n := v.len()
		for k := 1; k <= n; k++ {
			pos := ((start+dir*k)%n + n) % n
			i := v.at(pos)
			f, _, b, err := x.frameAt(dec, buf, i)
			buf = b
			if err != nil {
				return searchMsg{gen: gen, frame: -1}
			}
			line = bytes.ToLower(rowText(line[:0], f, showSecrets))
			if bytes.Contains(line, needle) {
				return searchMsg{gen: gen, frame: i}
			}
		}
		return searchMsg{gen: gen, frame: -1}
	}
}

// startSearch runs the search from the cursor.
func (m *Model) startSearch(dir int) tea.Cmd {
	if m.search.text == "" || m.view.len() == 0 {
		return nil
	}
	m.search.gen++
	m.search.running = true
	m.message = "searching for " + m.search.text + "…"
	return searchCmd(m.x, m.s.decOpts, m.view, m.cur, dir, m.search.text, m.opts.ShowSecrets, m.search.gen)
}

func (m *Model) onSearch(msg searchMsg) {
	if msg.gen != m.search.gen {
		return
	}
	m.search.running = false
	if msg.frame < 0 {
		m.message = "not found: " + m.search.text
		return
	}
	m.message = ""
	m.moveToFrame(msg.frame)
}
