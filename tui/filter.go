package tui

import (
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track"
	"github.com/pulsarscope/pulsarscope/track/filter"
)

// predicate selects the frames the timeline shows. Cheap predicates look
// at the row only; a display filter decodes each frame again.
type predicate struct {
	label string
	row   func(r *row, i int) bool
	expr  string // display filter (track/filter), "" for none
}

// filterState is the timeline's current filter and how far it has scanned.
type filterState struct {
	pred     *predicate
	gen      int
	scanned  int  // frames [0, scanned) have been tested
	scanning bool // a scan command is in flight
	err      error
	keep     int // frame to put the cursor on once the scan reaches it (-1: none)
}

func (f *filterState) active() bool { return f.pred != nil }

// scanBudget bounds the time one scan command runs before reporting
// progress, so the screen keeps updating while a long filter runs.
const scanBudget = 50 * time.Millisecond

// scanMsg reports the frames [from, to) a filter scan tested and those that matched.
type scanMsg struct {
	gen      int
	from, to int
	matched  []int32
	err      error
	evalErr  error
}

// compileFilter compiles a display filter; the error says where it is
// wrong. The filter sees secrets' values only with showSecrets.
func compileFilter(src string, showSecrets bool) (*filter.Filter, error) {
	f, err := filter.Compile(src)
	if err != nil {
		var se *filter.SyntaxError
		if errors.As(err, &se) {
			if se.Column >= 0 {
				return nil, fmt.Errorf("column %d: %s", se.Column+1, se.Message)
			}
			return nil, errors.New(se.Message)
		}
		return nil, err
	}
	return f.ShowSecrets(showSecrets), nil
}

// scanCmd tests frames [from, to) against p in a goroutine, for at most
// scanBudget.
func scanCmd(x *Index, decOpts decode.Options, p *predicate, gen, from, to int, showSecrets bool) tea.Cmd {
	return func() tea.Msg {
		msg := scanMsg{gen: gen, from: from, to: from}
		var flt *filter.Filter
		var dec *decode.Decoder
		if p.expr != "" {
			var err error
			if flt, err = compileFilter(p.expr, showSecrets); err != nil {
				msg.err = err
				return msg
			}
			dec = decode.NewDecoder(decOpts)
		}
		deadline := time.Now().Add(scanBudget)
		rows := make([]row, 1024)
		var buf, block []byte
		var info track.Info
		i := from
		for i < to {
			n := x.copyRows(rows[:min(len(rows), to-i)], i)
			if n == 0 {
				break
			}
			var base int64
			if flt != nil {
				block, base = x.rawBlock(block[:0], rows[:n])
			}
			for k := 0; k < n; k++ {
				r := &rows[k]
				if p.row != nil && !p.row(r, i+k) {
					continue
				}
				if flt != nil {
					var f *decode.Frame
					if block != nil && r.flags&flagNoRaw == 0 {
						f = x.frameFrom(dec, block[r.spill-base:r.spill-base+int64(r.size)], i+k, *r)
					} else {
						var err error
						if f, _, buf, err = x.frameAt(dec, buf, i+k); err != nil {
							msg.err = err
							msg.to = i + k
							return msg
						}
					}
					x.infoAt(i+k, *r, f, &info)
					// An evaluation error (a type mismatch on this frame) is
					// no match, as with -Y; the first one is reported.
					ok, err := flt.Match(f, &info)
					if err != nil && msg.evalErr == nil {
						msg.evalErr = err
					}
					if !ok {
						continue
					}
				}
				msg.matched = append(msg.matched, int32(i+k))
			}
			i += n
			if time.Now().After(deadline) {
				break
			}
		}
		msg.to = i
		return msg
	}
}

// setFilter replaces the timeline's filter (nil clears it) and keeps the
// cursor on the same frame when it passes.
func (m *Model) setFilter(p *predicate) tea.Cmd {
	keep := -1
	if m.view.len() > 0 {
		keep = m.view.at(m.cur)
	}
	m.filter.gen++
	m.filter.pred, m.filter.scanned, m.filter.scanning, m.filter.err = p, 0, false, nil
	m.search.gen++
	if p == nil {
		m.view.setAll(m.visibleFrames())
		m.moveToFrame(keep)
		return nil
	}
	m.view = viewList{filtered: true}
	m.filter.keep = keep
	m.follow = false
	return m.continueScan(m.visibleFrames())
}

// continueScan starts the next scan command when frames are left to test.
func (m *Model) continueScan(n int) tea.Cmd {
	f := &m.filter
	if !f.active() || f.scanning || f.scanned >= n || f.err != nil {
		return nil
	}
	f.scanning = true
	return scanCmd(m.x, m.s.decOpts, f.pred, f.gen, f.scanned, n, m.opts.ShowSecrets)
}

// onScan merges a scan's results and continues it.
func (m *Model) onScan(msg scanMsg) tea.Cmd {
	f := &m.filter
	if msg.gen != f.gen {
		return nil
	}
	f.scanning = false
	if msg.from != f.scanned {
		return m.continueScan(m.visibleFrames())
	}
	f.scanned = msg.to
	m.view.idx = append(m.view.idx, msg.matched...)
	if msg.err != nil {
		f.err = msg.err
		m.message = "filter: " + msg.err.Error()
	} else if msg.evalErr != nil && m.message == "" {
		m.message = "filter (no match where): " + oneLine(msg.evalErr.Error())
	}
	if f.keep >= 0 {
		if p, ok := m.view.find(f.keep); ok {
			m.cur = p
			f.keep = -1
		} else if f.scanned > f.keep {
			m.cur = min(p, max(0, m.view.len()-1))
			f.keep = -1
		}
	}
	if m.follow && m.view.len() > 0 {
		m.cur = m.view.len() - 1
	}
	m.clamp()
	m.syncDetail()
	return m.continueScan(m.visibleFrames())
}

// filterConn follows a connection.
func filterConn(id int32) *predicate {
	return &predicate{label: fmt.Sprintf("conn == %d", id), row: func(r *row, _ int) bool { return r.conn == id }}
}

// filterEntity follows a producer or consumer.
func filterEntity(e entity, id int32) *predicate {
	kind := "producer"
	if e.kind == entityConsumer {
		kind = "consumer"
	}
	return &predicate{label: fmt.Sprintf("%s %d on #%d (%s)", kind, e.id, e.conn, e.topic), row: func(r *row, _ int) bool { return r.entity == id }}
}

// filterProblems shows frames with problems.
func filterProblems() *predicate {
	return &predicate{label: "problems", row: func(r *row, _ int) bool { return r.flags&flagProblem != 0 }}
}

// filterExpr is a display filter.
func filterExpr(src string) *predicate { return &predicate{label: src, expr: src} }
