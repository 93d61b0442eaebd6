package diff

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fatih/color"

	"github.com/pulsarscope/pulsarscope/render"
)

// TextOptions configure WriteText.
type TextOptions struct {
	// Color colors the diff (removed red, added green, headers cyan,
	// regressions yellow).
	Color bool
}

// painter colors text when enabled, without touching fatih/color's global
// switch.
type painter struct {
	del, add, hunk, head, warn *color.Color
}

func newPainter(on bool) painter {
	mk := func(a ...color.Attribute) *color.Color {
		c := color.New(a...)
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
		return c
	}
	return painter{del: mk(color.FgRed), add: mk(color.FgGreen), hunk: mk(color.FgCyan), head: mk(color.Bold), warn: mk(color.FgYellow, color.Bold)}
}

// writeStream writes one stream's hunks and field changes.
func writeStream(bw *bufio.Writer, p painter, s StreamDiff) {
	note := ""
	switch s.Status {
	case "added":
		note = " (only in candidate)"
	case "removed":
		note = " (only in baseline)"
	}
	if s.Approximate {
		note += " (sequences too different: middle shown replaced)"
	}
	for _, h := range s.Hunks {
		fmt.Fprintln(bw, p.hunk.Sprintf("@@ -%s +%s @@ %s%s", span(h.BaseStart, h.BaseCount), span(h.CandStart, h.CandCount), render.Safe(s.Key), note))
		for _, l := range h.Lines {
			line := l.Op + render.Safe(l.Command.String())
			switch l.Op {
			case "-":
				line = p.del.Sprint(line)
			case "+":
				line = p.add.Sprint(line)
			}
			fmt.Fprintln(bw, line)
		}
	}
	for _, fc := range s.Fields {
		fmt.Fprintln(bw, p.warn.Sprint("~"+render.Safe(fc.String())))
	}
}

// WriteText writes the result as a unified diff of the command sequences
// (hunk headers name the stream), then the outcome, problem and latency
// differences, then the summary line.
func (r *Result) WriteText(w io.Writer, opts TextOptions) error {
	bw := bufio.NewWriter(w)
	p := newPainter(opts.Color)
	if !r.Same() {
		fmt.Fprintln(bw, p.head.Sprint("--- "+render.Safe(orDefault(r.Baseline, "baseline"))))
		fmt.Fprintln(bw, p.head.Sprint("+++ "+render.Safe(orDefault(r.Candidate, "candidate"))))
	}
	for _, s := range r.Streams {
		writeStream(bw, p, s)
	}
	writeCounts(bw, p, "outcomes", r.Outcomes)
	writeCounts(bw, p, "problems", r.Problems)
	var regs, notes []LatencyDiff
	for _, l := range r.Latency {
		switch {
		case l.Regression:
			regs = append(regs, l)
		case l.Note != "":
			notes = append(notes, l)
		}
	}
	if len(regs) > 0 {
		fmt.Fprintln(bw, p.hunk.Sprint("@@ latency regressions (p99) @@"))
		for _, l := range regs {
			fmt.Fprintln(bw, p.warn.Sprintf("!%s p99 %s -> %s (%+.0f%%; p50 %s -> %s; %d -> %d requests)",
				render.Safe(l.Type), micros(l.Baseline.P99), micros(l.Candidate.P99), 100*l.Growth,
				micros(l.Baseline.P50), micros(l.Candidate.P50), l.Baseline.Count, l.Candidate.Count))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(bw, p.hunk.Sprint("@@ latency: p99 grew, no regression @@"))
		for _, l := range notes {
			fmt.Fprintf(bw, " %s p99 %s -> %s (%+.0f%%): %s\n",
				render.Safe(l.Type), micros(l.Baseline.P99), micros(l.Candidate.P99), 100*l.Growth, l.Note)
		}
	}
	fmt.Fprintln(bw, r.Summary.Line(r.Same()))
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing diff: %w", err)
	}
	return nil
}

// String renders a field change as one line: "SEND metadata.compression:
// (absent) -> \"LZ4\" (10 commands)".
func (fc FieldChange) String() string {
	what := fc.Type
	if fc.Path != "" {
		what += " " + fc.Path
	}
	vals := "values vary"
	if fc.Baseline != "" || fc.Candidate != "" {
		vals = fc.Baseline + " -> " + fc.Candidate
	}
	return fmt.Sprintf("%s: %s (%d %s)", what, vals, fc.Count, plural(fc.Count, "command"))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// span renders a hunk range as diff(1) does: "start,count" or "start".
func span(start, count int) string {
	if count == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(count)
}

func writeCounts(w io.Writer, p painter, name string, ds []CountDiff) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintln(w, p.hunk.Sprintf("@@ %s @@", name))
	for _, d := range ds {
		if d.Baseline != 0 {
			fmt.Fprintln(w, p.del.Sprintf("-%s: %d", render.Safe(d.Key), d.Baseline))
		}
		if d.Candidate != 0 {
			fmt.Fprintln(w, p.add.Sprintf("+%s: %d", render.Safe(d.Key), d.Candidate))
		}
	}
}

func micros(us int64) string {
	return (time.Duration(us) * time.Microsecond).String()
}

// Line renders the summary as one line.
func (s Summary) Line(same bool) string {
	verdict := "differences"
	if same {
		verdict = "no differences"
	}
	parts := []string{
		fmt.Sprintf("%d %s added, %d removed, %d changed", s.Added, plural(s.Added, "command"), s.Removed, s.Changed),
	}
	if s.StreamsAdded+s.StreamsRemoved > 0 {
		parts = append(parts, fmt.Sprintf("%d %s only in candidate, %d only in baseline", s.StreamsAdded, plural(s.StreamsAdded, "stream"), s.StreamsRemoved))
	}
	parts = append(parts,
		fmt.Sprintf("%d %s changed", s.OutcomesChanged, plural(s.OutcomesChanged, "outcome")),
		fmt.Sprintf("%d new %s, %d gone", s.NewProblems, plural(s.NewProblems, "problem"), s.ProblemsGone),
		fmt.Sprintf("%d latency %s", s.LatencyRegressions, plural(s.LatencyRegressions, "regression")))
	return "pulsarscope diff: " + verdict + ": " + strings.Join(parts, "; ")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
