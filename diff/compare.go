package diff

import (
	"fmt"
	"sort"
	"time"
)

// Options configure loading and comparing.
type Options struct {
	// Ignore and Keep adjust the default normalisation rules (Resolve).
	Ignore, Keep []string
	// IgnoreOrder compares each stream's commands as a multiset.
	IgnoreOrder bool
	// LatencyThreshold, when positive, reports a request type whose p99
	// latency grew by more than this fraction (0.5: 50%) as a regression.
	LatencyThreshold float64
	// LatencyMin is the smallest p99 growth that can count as a regression
	// (differences below it are noise); 0 means DefaultLatencyMin.
	LatencyMin time.Duration
	// LatencyMinSamples is the fewest latencies a request type needs on
	// each side to be reported as a regression; 0 means
	// DefaultLatencyMinSamples. A regression also needs the candidate's
	// latencies to be greater than the baseline's by a one-sided
	// Mann-Whitney U test at LatencyAlpha.
	LatencyMinSamples int
	// Context is the number of unchanged commands shown around changes;
	// negative means DefaultContext.
	Context int
	// ShowSecrets records and shows credentials instead of redacting them.
	ShowSecrets bool
}

// Defaults for Options.
const (
	DefaultContext    = 3
	DefaultLatencyMin = 10 * time.Millisecond
)

// Result is the outcome of Compare.
type Result struct {
	// Baseline and Candidate name the two sides (as given to Compare's caller).
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Streams are the streams that differ, by key.
	Streams []StreamDiff `json:"streams"`
	// Outcomes, Problems: counts that differ.
	Outcomes []CountDiff `json:"outcomes"`
	Problems []CountDiff `json:"problems"`
	// Latency compares the request types both sides have; Regression marks
	// those past the threshold.
	Latency []LatencyDiff `json:"latency"`
	Summary Summary       `json:"summary"`
	// Compared lists what was compared, in order (for reports that list
	// what matched too: WriteJUnit): every stream key and outcome and
	// problem key of either side.
	Compared Compared `json:"-"`
}

// Compared is what Compare compared.
type Compared struct {
	Streams, Outcomes, Problems []string
}

// StreamDiff is one stream's differences.
type StreamDiff struct {
	Key string `json:"key"`
	// Status is "changed", "added" (only in the candidate) or "removed".
	Status string `json:"status"`
	Hunks  []Hunk `json:"hunks"`
	// Approximate is set when the sequences were too different to search
	// for a shortest edit script: the differing middle is shown replaced.
	Approximate bool `json:"approximate,omitempty"`
	// Fields says which fields differ between changed commands.
	Fields []FieldChange `json:"fields,omitempty"`
}

// Hunk is a run of changes with context, as in a unified diff. Starts are
// 1-based command positions; counts are the lines of each side.
type Hunk struct {
	BaseStart int    `json:"base_start"`
	BaseCount int    `json:"base_count"`
	CandStart int    `json:"cand_start"`
	CandCount int    `json:"cand_count"`
	Lines     []Line `json:"lines"`
}

// Line is one command of a hunk: Op is " " (both), "-" (baseline only) or
// "+" (candidate only).
type Line struct {
	Op      string  `json:"op"`
	Command Command `json:"command"`
}

// CountDiff is a count that differs between the sides.
type CountDiff struct {
	Key       string `json:"key"`
	Baseline  int    `json:"baseline"`
	Candidate int    `json:"candidate"`
}

// LatencyDiff compares one request type's latency.
type LatencyDiff struct {
	Type      string  `json:"type"`
	Baseline  Latency `json:"baseline"`
	Candidate Latency `json:"candidate"`
	// Growth is the p99's relative change (0.5: +50%).
	Growth     float64 `json:"growth"`
	Regression bool    `json:"regression"`
	// PValue is the one-sided Mann-Whitney U test's p-value that the
	// candidate is slower (set when both sides have enough samples).
	PValue float64 `json:"p_value,omitempty"`
	// Note says why a p99 growth beyond the threshold is not a
	// regression: not enough samples, or not significant.
	Note string `json:"note,omitempty"`
}

// Summary counts the differences.
type Summary struct {
	Added              int `json:"commands_added"`
	Removed            int `json:"commands_removed"`
	Changed            int `json:"commands_changed"`
	StreamsAdded       int `json:"streams_added"`
	StreamsRemoved     int `json:"streams_removed"`
	OutcomesChanged    int `json:"outcomes_changed"`
	NewProblems        int `json:"new_problems"`
	ProblemsGone       int `json:"problems_gone"`
	LatencyRegressions int `json:"latency_regressions"`
}

// Same reports whether the sides are equivalent: no command, outcome or
// problem differs and no latency regressed.
func (r *Result) Same() bool {
	return len(r.Streams) == 0 && len(r.Outcomes) == 0 && len(r.Problems) == 0 && r.Summary.LatencyRegressions == 0
}

// Compare compares two transcripts under opts's rules. A transcript
// recorded with fewer fields ignored is reduced to the rules first; one
// recorded with more is an error (its data is gone).
func Compare(base, cand *Transcript, opts Options) (*Result, error) {
	rules, err := Resolve(opts.Ignore, opts.Keep)
	if err != nil {
		return nil, err
	}
	b, err := conform(base, rules, opts.ShowSecrets)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	c, err := conform(cand, rules, opts.ShowSecrets)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	ctx := opts.Context
	if ctx < 0 {
		ctx = DefaultContext
	}
	res := &Result{Streams: []StreamDiff{}}
	compareStreams(res, b.Streams, c.Streams, opts.IgnoreOrder, ctx)
	res.Outcomes = countDiffs(b.Outcomes, c.Outcomes)
	res.Compared.Outcomes, res.Compared.Problems = unionKeys(b.Outcomes, c.Outcomes), unionKeys(b.Problems, c.Problems)
	res.Summary.OutcomesChanged = len(res.Outcomes)
	res.Problems = countDiffs(b.Problems, c.Problems)
	for _, p := range res.Problems {
		if p.Candidate > p.Baseline {
			res.Summary.NewProblems += p.Candidate - p.Baseline
		} else {
			res.Summary.ProblemsGone += p.Baseline - p.Candidate
		}
	}
	res.Latency = compareLatency(b.Latency, c.Latency, opts)
	for _, l := range res.Latency {
		if l.Regression {
			res.Summary.LatencyRegressions++
		}
	}
	return res, nil
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys(a, b map[string]int) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// compareStreams matches streams by key and diffs their commands.
func compareStreams(res *Result, bs, cs []Stream, ignoreOrder bool, ctx int) {
	byKey := func(ss []Stream) map[string]Stream {
		m := make(map[string]Stream, len(ss))
		for _, s := range ss {
			m[s.Key] = s
		}
		return m
	}
	bm, cm := byKey(bs), byKey(cs)
	keys := make([]string, 0, len(bm)+len(cm))
	for k := range bm {
		keys = append(keys, k)
	}
	for k := range cm {
		if _, ok := bm[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	res.Compared.Streams = keys
	for _, k := range keys {
		bst, inB := bm[k]
		cst, inC := cm[k]
		sd := StreamDiff{Key: k, Status: "changed"}
		switch {
		case !inB:
			sd.Status = "added"
			res.Summary.StreamsAdded++
		case !inC:
			sd.Status = "removed"
			res.Summary.StreamsRemoved++
		}
		bc, cc := bst.Commands, cst.Commands
		if ignoreOrder {
			bc, cc = sortedCommands(bc), sortedCommands(cc)
		}
		var fc fieldChanges
		sd.Hunks, sd.Approximate = diffCommands(bc, cc, ctx, &res.Summary, &fc)
		if sd.Status == "changed" {
			sd.Fields = fc.list()
		}
		if len(sd.Hunks) > 0 || sd.Status != "changed" {
			res.Streams = append(res.Streams, sd)
		}
	}
}

// sortedCommands returns the commands sorted by their text (multiset order).
func sortedCommands(cs []Command) []Command {
	type keyed struct {
		key string
		c   Command
	}
	ks := make([]keyed, len(cs))
	for i, c := range cs {
		ks[i] = keyed{c.String(), c}
	}
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].key < ks[j].key })
	out := make([]Command, len(cs))
	for i, k := range ks {
		out[i] = k.c
	}
	return out
}

// diffCommands diffs two command sequences into hunks and counts the
// changes: in each run of changes, paired deletions and insertions are
// "changed", the rest "removed" or "added".
func diffCommands(bc, cc []Command, ctx int, sum *Summary, fc *fieldChanges) ([]Hunk, bool) {
	script, approx := diffSeq(bc, cc, Command.Equal, Command.digest, workLimit)
	for i := 0; i < len(script); {
		if script[i].kind == opEqual {
			i++
			continue
		}
		var dels, ins []int
		for ; i < len(script) && script[i].kind != opEqual; i++ {
			if script[i].kind == opDelete {
				dels = append(dels, script[i].a)
			} else {
				ins = append(ins, script[i].b)
			}
		}
		ch := min(len(dels), len(ins))
		for k := 0; k < ch; k++ {
			fc.add(bc[dels[k]], cc[ins[k]])
		}
		sum.Changed += ch
		sum.Removed += len(dels) - ch
		sum.Added += len(ins) - ch
	}
	return hunks(script, bc, cc, ctx), approx
}

// hunks groups an edit script into unified-diff hunks with ctx lines of
// context.
func hunks(script []edit, bc, cc []Command, ctx int) []Hunk {
	var out []Hunk
	n := len(script)
	for i := 0; i < n; {
		if script[i].kind == opEqual {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		// Extend while the next change is within 2*ctx equal lines.
		for end < n {
			if script[end].kind != opEqual {
				end++
				continue
			}
			j := end
			for j < n && script[j].kind == opEqual {
				j++
			}
			if j < n && j-end <= 2*ctx {
				end = j
				continue
			}
			end = min(n, end+ctx)
			break
		}
		h := Hunk{BaseStart: -1, CandStart: -1}
		for _, e := range script[start:end] {
			switch e.kind {
			case opEqual:
				h.Lines = append(h.Lines, Line{Op: " ", Command: bc[e.a]})
				h.BaseCount++
				h.CandCount++
				h.setStarts(e.a, e.b)
			case opDelete:
				h.Lines = append(h.Lines, Line{Op: "-", Command: bc[e.a]})
				h.BaseCount++
				h.setStarts(e.a, -1)
			case opInsert:
				h.Lines = append(h.Lines, Line{Op: "+", Command: cc[e.b]})
				h.CandCount++
				h.setStarts(-1, e.b)
			}
		}
		h.fixStarts(script[start])
		out = append(out, h)
		i = end
	}
	return out
}

func (h *Hunk) setStarts(a, b int) {
	if a >= 0 && h.BaseStart < 0 {
		h.BaseStart = a + 1
	}
	if b >= 0 && h.CandStart < 0 {
		h.CandStart = b + 1
	}
}

// fixStarts sets the start of a side the hunk has no line of, as diff(1)
// does: the line before which the other side's lines go.
func (h *Hunk) fixStarts(first edit) {
	if h.BaseStart < 0 {
		h.BaseStart = first.a
	}
	if h.CandStart < 0 {
		h.CandStart = first.b
	}
}

// countDiffs lists the keys whose counts differ, sorted.
func countDiffs(b, c map[string]int) []CountDiff {
	out := []CountDiff{}
	for k, v := range b {
		if c[k] != v {
			out = append(out, CountDiff{Key: k, Baseline: v, Candidate: c[k]})
		}
	}
	for k, v := range c {
		if _, ok := b[k]; !ok && v != 0 {
			out = append(out, CountDiff{Key: k, Candidate: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// compareLatency compares p99 latency per request type present on both
// sides.
func compareLatency(b, c map[string]Latency, opts Options) []LatencyDiff {
	minGrowth := opts.LatencyMin
	if minGrowth <= 0 {
		minGrowth = DefaultLatencyMin
	}
	minSamples := opts.LatencyMinSamples
	if minSamples <= 0 {
		minSamples = DefaultLatencyMinSamples
	}
	out := []LatencyDiff{}
	for typ, bl := range b {
		cl, ok := c[typ]
		if !ok || bl.Count == 0 || cl.Count == 0 {
			continue
		}
		d := LatencyDiff{Type: typ, Baseline: bl, Candidate: cl}
		if bl.P99 > 0 {
			d.Growth = float64(cl.P99-bl.P99) / float64(bl.P99)
		}
		grew := time.Duration(cl.P99-bl.P99) * time.Microsecond
		grown := opts.LatencyThreshold > 0 && grew >= minGrowth && (bl.P99 == 0 || d.Growth > opts.LatencyThreshold)
		enough := len(bl.Samples) >= minSamples && len(cl.Samples) >= minSamples &&
			bl.Count >= minSamples && cl.Count >= minSamples
		if enough {
			d.PValue = mannWhitneyGreater(bl.Samples, cl.Samples)
		}
		switch {
		case !grown:
		case !enough:
			d.Note = fmt.Sprintf("not enough samples: %d and %d requests, a regression needs %d on each side", bl.Count, cl.Count, minSamples)
		case d.PValue >= LatencyAlpha:
			d.Note = fmt.Sprintf("not significant: p = %.3g (Mann-Whitney U, one-sided; a regression needs p < %g)", d.PValue, LatencyAlpha)
		default:
			d.Regression = true
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}
