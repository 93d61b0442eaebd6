package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/pulsarscope/pulsarscope/render"

	"github.com/charmbracelet/x/ansi"

	"github.com/pulsarscope/pulsarscope/decode"
)

// detail is the selected frame, decoded, as a tree and as bytes.
type detail struct {
	frame   int
	typ     string
	raw     []byte
	regions []decode.Region
	roots   []*node
	flat    []flatNode
	sel     int
	top     int
	hexTop  int
	hexH    int // lines the hex pane had at the last render
	secrets [][2]int
	err     error
}

type flatNode struct {
	n     *node
	depth int
}

// syncDetail rebuilds the detail when the cursor moved to another frame.
func (m *Model) syncDetail() {
	if !m.detailOpen || m.view.len() == 0 {
		return
	}
	i := m.view.at(m.cur)
	if m.det != nil && m.det.frame == i {
		return
	}
	m.det = m.buildDetail(i)
}

func (m *Model) buildDetail(i int) *detail {
	d := &detail{frame: i}
	r := m.x.at(i)
	raw, err := m.x.raw(nil, i)
	if err != nil {
		d.err = err
		return d
	}
	opts := m.s.decOpts
	opts.Retain = true
	var f *decode.Frame
	if r.flags&flagDamaged != 0 { // its start only: sizes and command
		f = decode.NewDecoder(opts).DecodeDamaged(raw, 0)
	} else {
		f = decode.Decode(raw, opts)
	}
	f.N, f.Time, f.Dir, f.Offset = i+1, time.Unix(0, r.time), r.dir(), r.offset
	f.Problems = m.x.problemsOf(i)
	if r.flags&flagNoRaw != 0 {
		f.Size, f.Type = int(r.size), r.cmdType()
	}
	d.raw, d.regions, d.typ = f.Raw, f.Regions, f.Type.String()
	ctx := frameContext{conn: r.conn}
	if r.pair > 0 {
		p := m.x.at(int(r.pair - 1))
		what := "Response"
		if r.flags&flagResponse != 0 {
			what = "Request"
		}
		ctx.nodes = append(ctx.nodes, leaf(fmt.Sprintf("%s: frame %d %s, latency %s (p jumps to it)", what, r.pair, p.cmdType(), fmtLatency(time.Duration(r.latency))), -1, -1))
	}
	if e, ok := m.x.entityAt(r.entity); ok {
		label := fmt.Sprintf("Producer %d: topic %s", e.id, e.topic)
		if e.kind == entityConsumer {
			label = fmt.Sprintf("Consumer %d: topic %s subscription %s", e.id, e.topic, e.subscription)
		}
		if e.name != "" {
			label += " name " + e.name
		}
		ctx.nodes = append(ctx.nodes, leaf(label+fmt.Sprintf(" (%d frames; e follows it)", e.frames), -1, -1))
	}
	d.roots, d.secrets = frameTree(f, ctx, m.opts.ShowSecrets)
	d.flatten()
	return d
}

func (d *detail) flatten() {
	d.flat = d.flat[:0]
	var walk func(ns []*node, depth int)
	walk = func(ns []*node, depth int) {
		for _, n := range ns {
			d.flat = append(d.flat, flatNode{n, depth})
			if n.open {
				walk(n.kids, depth+1)
			}
		}
	}
	walk(d.roots, 0)
	if d.sel >= len(d.flat) {
		d.sel = len(d.flat) - 1
	}
	if d.sel < 0 {
		d.sel = 0
	}
}

// selected returns the selected node (nil when none).
func (d *detail) selected() *node {
	if d == nil || d.sel >= len(d.flat) || len(d.flat) == 0 {
		return nil
	}
	return d.flat[d.sel].n
}

func (d *detail) move(delta, h int) {
	d.sel = max(0, min(len(d.flat)-1, d.sel+delta))
	if d.sel < d.top {
		d.top = d.sel
	}
	if d.sel >= d.top+h {
		d.top = d.sel - h + 1
	}
	d.showSelectionInHex()
}

// showSelectionInHex scrolls the hex pane to the selected field's bytes.
func (d *detail) showSelectionInHex() {
	n := d.selected()
	if n == nil || n.start < 0 {
		return
	}
	line := n.start / 16
	if line < d.hexTop || line >= d.hexTop+max(1, d.hexH) {
		d.hexTop = line
	}
}

func (d *detail) toggle(open int) {
	n := d.selected()
	if n == nil || len(n.kids) == 0 {
		return
	}
	switch open {
	case 1:
		n.open = true
	case -1:
		n.open = false
	default:
		n.open = !n.open
	}
	d.flatten()
}

// detailLines renders the tree.
func (m *Model) detailLines(h int) []string {
	d := m.det
	out := make([]string, 0, h)
	if d == nil {
		return out
	}
	if d.err != nil {
		return append(out, m.st.problem.Render(fit(d.err.Error(), m.w)))
	}
	if d.sel < d.top {
		d.top = d.sel
	}
	if d.sel >= d.top+h {
		d.top = d.sel - h + 1
	}
	for k := 0; k < h; k++ {
		p := d.top + k
		if p >= len(d.flat) {
			out = append(out, "")
			continue
		}
		fn := d.flat[p]
		sign := "  "
		if len(fn.n.kids) > 0 {
			sign = "▸ "
			if fn.n.open {
				sign = "▾ "
			}
		}
		// Labels hold strings from the wire: credentials by shape redacted
		// unless --show-secrets, control characters escaped, here, where
		// every label reaches the screen.
		label := render.RedactedDetail(fn.n.label, m.opts.ShowSecrets)
		line := fit(strings.Repeat("  ", fn.depth)+sign+render.Safe(label), m.w)
		switch {
		case p == d.sel && m.focus == focusDetail:
			line = m.st.selField.Render(line)
		case p == d.sel:
			line = m.st.header.Render(line)
		case fn.n.problem:
			line = m.st.problem.Render(line)
		}
		out = append(out, line)
	}
	return out
}

// hexLines renders the frame's bytes, 16 a line, colored by region, the
// selected field's bytes reversed, secrets masked.
func (m *Model) hexLines(h int) []string {
	d := m.det
	out := make([]string, 0, h)
	if d == nil || len(d.raw) == 0 {
		if d != nil {
			out = append(out, m.st.dim.Render("(no bytes kept for this frame)"))
		}
		return out
	}
	lines := (len(d.raw) + 15) / 16
	d.hexH = h
	if d.hexTop > lines-h {
		d.hexTop = max(0, lines-h)
	}
	selStart, selEnd := -1, -1
	if n := d.selected(); n != nil && n.start >= 0 {
		selStart, selEnd = n.start, n.end
	}
	regionOf := func(b int) string {
		for _, r := range d.regions {
			if b >= r.Start && b < r.End {
				return r.Name
			}
		}
		return ""
	}
	secret := func(b int) bool {
		for _, s := range d.secrets {
			if b >= s[0] && b < s[1] {
				return true
			}
		}
		return false
	}
	var sb strings.Builder
	for k := 0; k < h; k++ {
		ln := d.hexTop + k
		if ln >= lines {
			out = append(out, "")
			continue
		}
		sb.Reset()
		fmt.Fprintf(&sb, "%04x  ", ln*16)
		var asc strings.Builder
		for c := 0; c < 16; c++ {
			b := ln*16 + c
			if c == 8 {
				sb.WriteByte(' ')
			}
			if b >= len(d.raw) {
				sb.WriteString("   ")
				continue
			}
			hx := fmt.Sprintf("%02x", d.raw[b])
			ch := d.raw[b]
			a := "."
			if ch >= 0x20 && ch < 0x7f {
				a = string(ch)
			}
			if secret(b) {
				hx, a = "**", "*"
			}
			st := m.st.region[regionOf(b)]
			if b >= selStart && b < selEnd {
				st = m.st.selField
			}
			sb.WriteString(st.Render(hx))
			sb.WriteByte(' ')
			asc.WriteString(st.Render(a))
		}
		sb.WriteString(" ")
		sb.WriteString(asc.String())
		out = append(out, ansi.Truncate(sb.String(), m.w, ""))
	}
	return out
}
