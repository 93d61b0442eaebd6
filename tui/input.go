package tui

import (
	"sort"

	tea "charm.land/bubbletea/v2"
)

// onKey handles a key press.
func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	key := k.String()
	if key == "ctrl+c" {
		return tea.Quit
	}
	if m.inputKind != inputNone {
		return m.onInputKey(k)
	}
	if m.screen == screenHelp || m.screen == screenStats {
		if cmd, ok := m.onScrollKey(key); ok {
			return cmd
		}
	}
	m.message = ""
	switch key {
	case "q":
		return tea.Quit
	case "?":
		m.back, m.screen, m.listTop = m.screen, screenHelp, 0
		return nil
	case "1":
		m.screen = screenTimeline
		return nil
	case "2", "3", "4":
		m.screen = screenConns + screen(key[0]-'2')
		m.listCur, m.listTop = 0, 0
		if m.screen == screenStats {
			m.report = nil
			m.refreshReport()
		}
		return nil
	}
	if m.screen != screenTimeline {
		return m.onListKey(key)
	}
	if m.detailOpen && m.focus != focusTimeline {
		if cmd, ok := m.onPaneKey(key); ok {
			return cmd
		}
	}
	return m.onTimelineKey(key)
}

// onScrollKey scrolls the help and statistics screens; any other key
// closes help, and is handled as usual on the statistics screen.
func (m *Model) onScrollKey(key string) (tea.Cmd, bool) {
	switch key {
	case "up", "k":
		m.listTop = max(0, m.listTop-1)
	case "down", "j":
		m.listTop++
	case "pgup":
		m.listTop = max(0, m.listTop-(m.h-3))
	case "pgdown", "space":
		m.listTop += m.h - 3
	case "home", "g":
		m.listTop = 0
	case "q":
		return tea.Quit, true
	default:
		if m.screen == screenHelp {
			m.screen, m.listTop = m.back, 0
			return nil, true
		}
		return nil, false
	}
	return nil, true
}

func (m *Model) onTimelineKey(key string) tea.Cmd {
	page := m.layout().rows
	switch key {
	case "up", "k":
		m.moveTo(m.cur - 1)
	case "down", "j":
		m.moveTo(m.cur + 1)
	case "pgup", "ctrl+b":
		m.top = max(0, m.top-page)
		m.moveTo(m.cur - page)
	case "pgdown", "ctrl+f", "space":
		if key == "space" && m.s.src.Live() {
			m.togglePause()
			return nil
		}
		m.top += page
		m.moveTo(m.cur + page)
	case "home", "g":
		m.moveTo(0)
	case "end", "G":
		m.moveTo(m.view.len() - 1)
		m.follow = m.s.src.Live()
	case "enter":
		m.detailOpen = !m.detailOpen
		m.focus = focusTimeline
		if m.detailOpen {
			m.det = nil
			m.syncDetail()
		}
		m.clamp()
	case "tab":
		if m.detailOpen {
			m.focus = (m.focus + 1) % 3
		}
	case "esc":
		if m.filter.active() {
			return m.setFilter(nil)
		}
		if m.detailOpen {
			m.detailOpen = false
			m.clamp()
		}
	case "/":
		m.openInput(inputSearch, m.search.text)
	case "f":
		v := ""
		if m.filter.active() && m.filter.pred.expr != "" {
			v = m.filter.pred.expr
		}
		m.openInput(inputFilter, v)
	case "n":
		return m.startSearch(1)
	case "N":
		return m.startSearch(-1)
	case "p":
		m.jumpToPair()
	case "c":
		if m.view.len() > 0 {
			r := m.x.at(m.view.at(m.cur))
			return m.setFilter(filterConn(r.conn))
		}
	case "e":
		if m.view.len() > 0 {
			r := m.x.at(m.view.at(m.cur))
			if e, ok := m.x.entityAt(r.entity); ok {
				return m.setFilter(filterEntity(e, r.entity))
			}
			m.message = "this frame names no producer or consumer"
		}
	case "!":
		return m.setFilter(filterProblems())
	case "m":
		if m.view.len() > 0 {
			i := int32(m.view.at(m.cur))
			if m.marks[i] {
				delete(m.marks, i)
			} else {
				m.marks[i] = true
			}
		}
	case "'", "\"":
		m.nextMark(key == "'")
	case "t":
		m.timeFmt = (m.timeFmt + 1) % 3
	}
	return nil
}

// onPaneKey handles keys for the focused detail or hex pane; ok is false
// for keys the timeline should handle.
func (m *Model) onPaneKey(key string) (tea.Cmd, bool) {
	d := m.det
	if d == nil {
		return nil, false
	}
	l := m.layout()
	if m.focus == focusHex {
		switch key {
		case "up", "k":
			d.hexTop = max(0, d.hexTop-1)
		case "down", "j":
			d.hexTop++
		case "pgup":
			d.hexTop = max(0, d.hexTop-l.hex)
		case "pgdown":
			d.hexTop += l.hex
		default:
			return nil, false
		}
		return nil, true
	}
	switch key {
	case "up", "k":
		d.move(-1, l.detail)
	case "down", "j":
		d.move(1, l.detail)
	case "pgup":
		d.move(-l.detail, l.detail)
	case "pgdown":
		d.move(l.detail, l.detail)
	case "home", "g":
		d.move(-len(d.flat), l.detail)
	case "end", "G":
		d.move(len(d.flat), l.detail)
	case "left", "h":
		if n := d.selected(); n != nil && (len(n.kids) == 0 || !n.open) {
			d.selectParent()
		} else {
			d.toggle(-1)
		}
	case "right", "l":
		d.toggle(1)
	case "enter", "space":
		d.toggle(0)
	default:
		return nil, false
	}
	return nil, true
}

// selectParent moves the selection to the parent of the selected node.
func (d *detail) selectParent() {
	depth := d.flat[d.sel].depth
	for p := d.sel - 1; p >= 0; p-- {
		if d.flat[p].depth < depth {
			d.sel = p
			return
		}
	}
}

func (m *Model) onListKey(key string) tea.Cmd {
	n := m.listLen()
	page := max(1, m.h-4)
	switch key {
	case "up", "k":
		m.listCur = max(0, m.listCur-1)
	case "down", "j":
		m.listCur = min(n-1, m.listCur+1)
	case "pgup":
		m.listCur = max(0, m.listCur-page)
	case "pgdown":
		m.listCur = min(n-1, m.listCur+page)
	case "home", "g":
		m.listCur = 0
	case "end", "G":
		m.listCur = n - 1
	case "esc":
		m.screen = screenTimeline
	case "enter":
		switch m.screen {
		case screenConns:
			if cs := m.x.connRange(m.listCur, m.listCur+1); len(cs) == 1 {
				m.screen = screenTimeline
				return m.setFilter(filterConn(int32(cs[0].conn.ID)))
			}
		case screenProblems:
			if ps := m.x.problemRange(m.listCur, m.listCur+1); len(ps) == 1 && ps[0].frame >= 0 {
				m.screen = screenTimeline
				m.moveToFrame(int(ps[0].frame))
			}
		}
	}
	m.listCur = max(0, m.listCur)
	return nil
}

func (m *Model) togglePause() {
	m.paused = !m.paused
	if m.paused {
		m.pausedAt = m.x.Len()
		m.follow = false
	} else {
		m.follow = true
	}
}

// jumpToPair moves to the frame paired with the selected one.
func (m *Model) jumpToPair() {
	if m.view.len() == 0 {
		return
	}
	r := m.x.at(m.view.at(m.cur))
	if r.pair == 0 {
		m.message = "this frame has no paired request or response"
		return
	}
	m.moveToFrame(int(r.pair - 1))
}

// nextMark moves to the next (or previous) marked frame.
func (m *Model) nextMark(forward bool) {
	if len(m.marks) == 0 {
		m.message = "no marks (m marks a frame)"
		return
	}
	ms := make([]int, 0, len(m.marks))
	for i := range m.marks {
		ms = append(ms, int(i))
	}
	sort.Ints(ms)
	cur := -1
	if m.view.len() > 0 {
		cur = m.view.at(m.cur)
	}
	target := -1
	if forward {
		target = ms[0]
		for _, i := range ms {
			if i > cur {
				target = i
				break
			}
		}
	} else {
		target = ms[len(ms)-1]
		for k := len(ms) - 1; k >= 0; k-- {
			if ms[k] < cur {
				target = ms[k]
				break
			}
		}
	}
	m.moveToFrame(target)
}

// openInput shows the filter or search line.
func (m *Model) openInput(kind inputKind, value string) {
	m.inputKind = kind
	m.input.SetValue(value)
	m.input.CursorEnd()
	m.input.SetWidth(max(10, m.w-40))
	m.input.Focus()
	m.onInputChange()
}

func (m *Model) onInputKey(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.inputKind, m.inputErr = inputNone, ""
		m.input.Blur()
		return nil
	case "enter":
		kind, val := m.inputKind, m.input.Value()
		if kind == inputFilter && m.inputErr != "" {
			return nil // keep typing: the error is shown
		}
		m.inputKind, m.inputErr = inputNone, ""
		m.input.Blur()
		if kind == inputSearch {
			m.search.text = val
			return m.startSearch(1)
		}
		if val == "" {
			return m.setFilter(nil)
		}
		return m.setFilter(filterExpr(val))
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	m.onInputChange()
	return cmd
}

// onInputChange checks the filter as it is typed.
func (m *Model) onInputChange() {
	m.inputErr = ""
	if m.inputKind != inputFilter || m.input.Value() == "" {
		return
	}
	if _, err := compileFilter(m.input.Value(), m.opts.ShowSecrets); err != nil {
		m.inputErr = err.Error()
	}
}
