package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/render"
	"github.com/pulsarscope/pulsarscope/track"
	"github.com/pulsarscope/pulsarscope/track/stats"
)

// The Capture table of the stats report: the capture counters of each
// input, from the Interface Statistics Blocks of a pcapng file ('stats'),
// or from the kernel for a live capture ('capture -o stats').

// newStatsCollector returns the collector of the stats report, and sets pc
// so that each input read to its end adds its capture counters to it.
func newStatsCollector(pc *pipelineConfig) *stats.Collector {
	col := stats.New()
	pc.sourceDone = func(name string, src *capture.Source) {
		col.AddCapture(captureRows(inputName(name), src.InterfaceStats())...)
	}
	return col
}

// statsDecoding sets pc to decode only as deep as the stats report needs.
// Neither the tracker, the filter nor the tables read batch entries'
// metadata: it is validated on the wire, not decoded (much faster on
// batches of many small messages). Nor do they read payloads: unless
// payloads is set (stats --payloads), they stay compressed and batches
// unsplit (the checksum still covers them; the report says so).
func statsDecoding(pc *pipelineConfig, payloads bool) {
	pc.decode.LazyEntryMetadata = true
	pc.decode.SkipPayloadContents = !payloads
}

// inputName is how the report names an input: as given, stdin for "-".
func inputName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// captureRows turns an input's interface counters into Capture rows.
func captureRows(input string, ifs []capture.InterfaceStats) []stats.CaptureRow {
	rows := make([]stats.CaptureRow, 0, len(ifs))
	for _, s := range ifs {
		row := stats.CaptureRow{Input: input, Index: s.Index, Interface: s.Name, Received: s.Received, Dropped: s.Dropped}
		row.Start, row.End = reportTime(s.Start), reportTime(s.End)
		rows = append(rows, row)
	}
	return rows
}

// reportTime is t for the report, nil when not recorded or when it cannot
// be a date (a hostile or broken file: years beyond 0–9999 have no RFC 3339
// form, and JSON could not be written).
func reportTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return nil
	}
	return &t
}

// writeStatsReport writes the stats report as one JSON document or as the
// text tables of writeStatsText, under a title naming the inputs.
// writeStatsReport writes the report as JSON or text tables; credentials
// by shape are redacted unless showSecrets, and strings from the wire are
// made safe for a terminal either way.
func writeStatsReport(w io.Writer, rep *stats.Report, asJSON, showSecrets bool, names []string) error {
	if !showSecrets {
		rep.RedactSecrets()
	}
	if asJSON {
		enc := json.NewEncoder(render.JSONSafeWriter(w))
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if err := writeStatsText(w, rep, names); err != nil {
		return err
	}
	if !rep.PayloadsChecked {
		_, err := fmt.Fprintln(w, "\n(payload contents not checked: 'stats --payloads' decompresses them and checks batches)")
		return err
	}
	return nil
}

// writeCaptureText writes the Capture section of the text report (nothing
// when no input had counters). tw is writeStatsText's tabwriter.
func writeCaptureText(tw io.Writer, rows []stats.CaptureRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(tw, "\n== Capture\n")
	fmt.Fprintln(tw, "input\tinterface\treceived\tdropped\tstart (UTC)\tspan\t")
	for _, r := range rows {
		name := r.Interface
		if name == "" {
			name = fmt.Sprintf("#%d", r.Index)
		}
		start, span := "-", "-"
		if r.Start != nil {
			start = r.Start.Format("2006-01-02 15:04:05.000")
		}
		if r.SpanUS != nil {
			span = (time.Duration(*r.SpanUS) * time.Microsecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", dash(r.Input), dash(name), count(r.Received), count(r.Dropped), start, span)
	}
}

// count shows a counter, or "-" when it was not recorded.
func count(v *uint64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// liveStatsReport is the output of 'capture -o stats' and '-o stats-json':
// the report of 'stats' (the same collector and writer), written when the
// capture ends, with the kernel's counters as its Capture table.
type liveStatsReport struct {
	col  *stats.Collector
	sink track.Sink // col under the display filter (-Y)
	fs   *filterSink
	json bool
	// showSecrets: --show-secrets (writeStatsReport).
	showSecrets bool
}

// newLiveStatsReport checks the read flags against -o stats and sets in pc
// what the report needs (as runStats does).
func newLiveStatsReport(e *env, o *readOptions, pc *pipelineConfig) (*liveStatsReport, error) {
	for _, c := range []struct {
		set  bool
		flag string
	}{{o.quiet, "-q"}, {o.verbose, "-V"}, {o.hex, "-x"}, {o.payload, "--payload"}, {o.events, "--events"}} {
		if c.set {
			return nil, usageErr("-o %s prints the stats report when the capture ends, not frames: %s does not apply", o.output, c.flag)
		}
	}
	flt, err := compileFilter(o.filter, o.showSecrets)
	if err != nil {
		return nil, err
	}
	statsDecoding(pc, false)
	// A spinner of the bytes captured, on a terminal: nothing else is
	// printed until the end.
	if pc.progress, err = newProgress(e, o.progress); err != nil {
		return nil, err
	}
	r := &liveStatsReport{col: stats.New(), json: o.output == "stats-json", showSecrets: o.showSecrets}
	r.sink, r.fs = withFilter(r.col, flt)
	return r, nil
}

// write adds the live capture's counters (input "live") to the report and
// writes it to stdout.
func (r *liveStatsReport) write(e *env, iface string, ifs []capture.InterfaceStats) error {
	if r.fs != nil && r.fs.err != nil {
		fmt.Fprintf(e.stderr, "pulsarscope: warning: %s\n", render.SafeLines(r.fs.err.Error()))
	}
	r.col.AddCapture(captureRows("live", ifs)...)
	return writeStatsReport(e.stdout, r.col.Report(), r.json, r.showSecrets, []string{iface + " (live capture)"})
}
