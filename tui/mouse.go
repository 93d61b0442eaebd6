package tui

import tea "charm.land/bubbletea/v2"

// onWheel scrolls the pane under the mouse.
func (m *Model) onWheel(w tea.MouseWheelMsg) {
	delta := 3
	if w.Button == tea.MouseWheelUp {
		delta = -3
	} else if w.Button != tea.MouseWheelDown {
		return
	}
	if m.screen != screenTimeline {
		m.listCur = max(0, min(m.listLen()-1, m.listCur+delta))
		return
	}
	l := m.layout()
	if m.detailOpen && w.Y >= 2+l.rows && m.det != nil {
		if w.Y >= 3+l.rows+l.detail {
			m.det.hexTop = max(0, m.det.hexTop+delta)
		} else {
			m.det.move(delta, l.detail)
		}
		return
	}
	m.moveTo(max(0, m.cur+delta))
}

// onClick selects the row or field under the mouse.
func (m *Model) onClick(c tea.MouseClickMsg) {
	if c.Button != tea.MouseLeft {
		return
	}
	if c.Y == 0 {
		if sc, ok := tabAt(c.X); ok && m.screen != screenHelp {
			m.screen, m.listCur, m.listTop = sc, 0, 0
		}
		return
	}
	if m.screen != screenTimeline {
		if p := m.listTop + c.Y - 2; c.Y >= 2 && p < m.listLen() {
			m.listCur = p
		}
		return
	}
	l := m.layout()
	switch {
	case c.Y >= 2 && c.Y < 2+l.rows:
		if p := m.top + c.Y - 2; p < m.view.len() {
			m.focus = focusTimeline
			m.moveTo(p)
		}
	case m.detailOpen && m.det != nil && c.Y >= 3+l.rows && c.Y < 3+l.rows+l.detail:
		if p := m.det.top + c.Y - 3 - l.rows; p < len(m.det.flat) {
			m.focus = focusDetail
			m.det.sel = p
			m.det.showSelectionInHex()
		}
	}
}
