package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/pulsarscope/pulsarscope/render"
)

// rowCache keeps the formatted summaries of recently shown frames, so that
// scrolling decodes each frame once.
type rowCache struct {
	m map[int32]string
}

const rowCacheMax = 4096

func newRowCache() rowCache { return rowCache{m: map[int32]string{}} }

// summary returns the identifying fields and problems of frame i.
func (m *Model) summary(i int) string {
	if s, ok := m.cache.m[int32(i)]; ok {
		return s
	}
	f, _, b, err := m.x.frameAt(m.dec, m.buf, i)
	m.buf = b
	var s string
	if err != nil {
		s = "(" + err.Error() + ")"
	} else {
		line := render.AppendSummary(nil, f, m.opts.ShowSecrets)
		for _, p := range f.Problems {
			line = append(line, " ["...)
			line = append(line, p.Code...)
			line = append(line, ']')
		}
		s = strings.TrimSpace(string(line))
	}
	if len(m.cache.m) >= rowCacheMax {
		clear(m.cache.m)
	}
	m.cache.m[int32(i)] = s
	return s
}

// layout is the heights of the timeline screen's parts.
type layout struct {
	rows, detail, hex int
}

func (m *Model) layout() layout {
	avail := m.h - 3 // title, column header, status
	if !m.detailOpen {
		return layout{rows: max(1, avail)}
	}
	avail -= 2 // the two pane headers
	rows := max(3, avail/3)
	rest := max(2, avail-rows)
	hex := max(1, rest*2/5)
	if m.det != nil {
		hex = min(hex, max(1, (len(m.det.raw)+15)/16))
	}
	return layout{rows: rows, detail: rest - hex, hex: hex}
}

// clamp keeps the cursor in the view and on screen.
func (m *Model) clamp() {
	n := m.view.len()
	if m.cur >= n {
		m.cur = n - 1
	}
	if m.cur < 0 {
		m.cur = 0
	}
	h := m.layout().rows
	if m.cur < m.top {
		m.top = m.cur
	}
	if m.cur >= m.top+h {
		m.top = m.cur - h + 1
	}
	if m.top > max(0, n-h) {
		m.top = max(0, n-h)
	}
	if m.top < 0 {
		m.top = 0
	}
}

// moveTo puts the cursor on position pos.
func (m *Model) moveTo(pos int) {
	m.cur = pos
	m.follow = m.s.src.Live() && pos >= m.view.len()-1
	m.clamp()
	m.syncDetail()
}

// moveToFrame puts the cursor on frame i, clearing the filter when it hides i.
func (m *Model) moveToFrame(i int) {
	if i < 0 {
		m.clamp()
		return
	}
	if i >= m.visibleFrames() && m.paused {
		m.paused = false
	}
	p, ok := m.view.find(i)
	if !ok && m.filter.active() {
		m.message = "frame " + strconv.Itoa(i+1) + " is hidden by the filter: filter cleared"
		m.setFilter(nil)
		p, _ = m.view.find(i)
	}
	m.moveTo(p)
	// Show the frame with some context above it.
	if h := m.layout().rows; m.cur-m.top < h/4 && m.cur >= h/4 {
		m.top = m.cur - h/4
		m.clamp()
	}
}

// columns of the timeline.
type columns struct {
	time, typ int
}

func (m *Model) columns() columns {
	c := columns{time: 10, typ: 22}
	if m.timeFmt == timeAbsolute {
		c.time = 15
	}
	if m.w >= 120 {
		c.typ = 29
	}
	return c
}

func (m *Model) header() string {
	c := m.columns()
	name := "Time"
	switch m.timeFmt {
	case timeAbsolute:
		name = "Time (abs)"
	case timeDelta:
		name = "Delta"
	}
	s := fmt.Sprintf("  %7s %*s %-4s %s %-*s %9s %s", "No.", c.time, name, "Conn", " ", c.typ, "Type", "Latency", "Info")
	return m.st.header.Render(fit(s, m.w))
}

// timelineLines renders the visible rows.
func (m *Model) timelineLines(h int) []string {
	out := make([]string, 0, h)
	c := m.columns()
	start := m.x.startTime().UnixNano()
	for k := 0; k < h; k++ {
		pos := m.top + k
		if pos >= m.view.len() {
			out = append(out, "")
			continue
		}
		i := m.view.at(pos)
		r := m.x.at(i)
		mark, prob := " ", " "
		if m.marks[int32(i)] {
			mark = "*"
		}
		if r.flags&flagProblem != 0 {
			prob = "!"
		}
		var ts string
		switch m.timeFmt {
		case timeAbsolute:
			ts = time.Unix(0, r.time).UTC().Format("15:04:05.000000")
		case timeDelta:
			prev := r.time
			if pos > 0 {
				prev = m.x.at(m.view.at(pos - 1)).time
			}
			ts = strconv.FormatFloat(float64(r.time-prev)/1e9, 'f', 6, 64)
		default:
			ts = strconv.FormatFloat(float64(r.time-start)/1e9, 'f', 6, 64)
		}
		arrow := "→"
		if r.flags&flagS2C != 0 {
			arrow = "←"
		}
		typ := r.cmdType().String()
		if len(typ) > c.typ {
			typ = typ[:c.typ-1] + "…"
		}
		lat := ""
		if r.pair > 0 {
			lat = fmtLatency(time.Duration(r.latency))
		}
		head := fmt.Sprintf("%7d %*s %-4s %s ", i+1, c.time, ts, "#"+strconv.Itoa(int(r.conn)), arrow)
		typCol := fmt.Sprintf("%-*s", c.typ, typ)
		tail := fmt.Sprintf(" %9s %s", lat, m.summary(i))
		if pos == m.cur {
			line := fit(mark+prob+head+typCol+tail, m.w)
			if m.focus == focusTimeline || !m.detailOpen {
				line = m.st.cursor.Render(line)
			} else {
				line = m.st.header.Render(line)
			}
			out = append(out, line)
			continue
		}
		markS := mark
		if mark != " " {
			markS = m.st.mark.Render(mark)
		}
		probS := prob
		if prob != " " {
			probS = m.st.problem.Render(prob)
		}
		line := markS + probS + head + m.st.family[render.FamilyOf(r.cmdType())].Render(typCol) + tail
		out = append(out, ansi.Truncate(line, m.w, ""))
	}
	return out
}

// fit cuts s to w cells and pads it to w.
func fit(s string, w int) string {
	s = ansi.Truncate(s, w, "")
	if n := ansi.StringWidth(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// fmtLatency shows a duration in its most readable unit.
func fmtLatency(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e3, 'f', 0, 64) + "µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
}

// fmtBytes shows a byte count.
func fmtBytes(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
}
