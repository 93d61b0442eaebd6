package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/diff"
	"github.com/pulsarscope/pulsarscope/track"
)

// Exit codes of 'diff', like diff(1).
const (
	// ExitDiffSame: the two sides are equivalent.
	ExitDiffSame = 0
	// ExitDiffDifferent: they differ.
	ExitDiffDifferent = 1
	// ExitDiffError: bad usage or an input could not be read.
	ExitDiffError = 2
)

// diffOptions are the flags of 'diff'.
type diffOptions struct {
	ignore, keep     []string
	ignoreOrder      bool
	latencyThreshold string
	latencyMin       time.Duration
	latencySamples   int
	output           string
	color            string
	context          int
	update           bool
	showSecrets      bool
	maxFrameSize     string
	ports            []uint
	detect           bool
}

func newDiffCmd(e *env) *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff BASELINE CANDIDATE",
		Short: "Compare two captures or transcripts after normalisation (exit 0 same, 1 different, 2 error)",
		Long: `diff compares the Pulsar conversations of two captures, or of a capture and a
transcript saved with 'pulsarscope read -o transcript' (docs/diff.md): per
connection, producer and consumer (matched by topic, subscription and names,
not by ports or ids) the sequence of commands and their fields, the outcomes
of requests, the problems found, and (with --latency-threshold) latency.

Times, ports, request/producer/consumer ids, publish_time and other
run-dependent values are ignored; message ids and broker-generated names are
renumbered; PING/PONG are ignored and ACK frames summarised per consumer.
--ignore and --keep adjust this.`,
		Example: `  pulsarscope diff testdata/pcaps/basic.pcap testdata/diff/basic-b.pcap
  pulsarscope read -o transcript good.pcap > golden.json
  pulsarscope diff golden.json run.pcap
  pulsarscope diff --update golden.json run.pcap          # accept the new behaviour
  pulsarscope diff --latency-threshold 50% golden.json run.pcap
  pulsarscope diff --keep keepalive --ignore payload -o json a.pcap b.pcap`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return diffExit(runDiff(cmd.Context(), e, o, args[0], args[1]))
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.ignore, "ignore", nil, "also ignore this field (schema field name or "+strings.Join(diff.PseudoFields(), ", ")+"; repeatable, comma-separated)")
	f.StringSliceVar(&o.keep, "keep", nil, "compare this normally ignored or renumbered field as it is (repeatable, comma-separated)")
	f.BoolVar(&o.ignoreOrder, "ignore-order", false, "compare each stream's commands as a multiset (order does not matter)")
	f.StringVar(&o.latencyThreshold, "latency-threshold", "", "report request types whose p99 latency grew by more than this, e.g. 50% (default: latency not compared)")
	f.DurationVar(&o.latencyMin, "latency-min", diff.DefaultLatencyMin, "smallest p99 growth that counts as a latency regression")
	f.IntVar(&o.latencySamples, "latency-min-samples", diff.DefaultLatencyMinSamples, "fewest requests of a type on each side for a latency regression (fewer: \"not enough samples\")")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text (unified diff), json or junit (JUnit XML for CI test reporters)")
	f.StringVar(&o.color, "color", "auto", "color the text output: auto, always or never (NO_COLOR is honoured by auto)")
	f.IntVarP(&o.context, "unified", "U", diff.DefaultContext, "commands of context around each change")
	f.BoolVar(&o.update, "update", false, "write CANDIDATE's transcript to BASELINE (a transcript file, created if missing) instead of comparing")
	f.BoolVar(&o.showSecrets, "show-secrets", false, "record and print auth_data and tokens instead of redacting them")
	f.StringVar(&o.maxFrameSize, "max-frame-size", "5MiB", "largest plausible frame (as for read)")
	f.UintSliceVar(&o.ports, "port", nil, "extra Pulsar server port (as for read)")
	f.BoolVar(&o.detect, "detect", false, "find Pulsar on any TCP port (as for read)")
	return cmd
}

// diffExit maps every error to diff's exit code 2, keeping the message.
func diffExit(err error) error {
	var ee *exitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && (ee.code == ExitDiffDifferent || ee.code == ExitDiffError):
		return err
	case errors.As(err, &ee):
		return &exitError{code: ExitDiffError, err: ee.err}
	}
	return &exitError{code: ExitDiffError, err: err}
}

func runDiff(ctx context.Context, e *env, o *diffOptions, basePath, candPath string) error {
	opts := diff.Options{Ignore: o.ignore, Keep: o.keep, IgnoreOrder: o.ignoreOrder,
		LatencyMin: o.latencyMin, LatencyMinSamples: o.latencySamples, Context: o.context, ShowSecrets: o.showSecrets}
	if o.context < 0 {
		return usageErr("-U %d: the context must be 0 or more", o.context)
	}
	th, err := parsePercent(o.latencyThreshold)
	if err != nil {
		return usageErr("--latency-threshold: %v", err)
	}
	opts.LatencyThreshold = th
	rules, err := diff.Resolve(o.ignore, o.keep)
	if err != nil {
		return usageErr("%v", err)
	}
	if o.output != "text" && o.output != "json" && o.output != "junit" {
		return usageErr("-o %q: the formats are text, json and junit", o.output)
	}
	if basePath == "-" && candPath == "-" {
		return usageErr("only one side can be read from stdin ('-')")
	}
	pc, err := newPipelineConfig(o.maxFrameSize, o.ports, o.detect)
	if err != nil {
		return err
	}
	if o.update {
		return updateGolden(ctx, e, pc, rules, o, basePath, candPath)
	}
	base, err := loadSide(ctx, e, pc, rules, o.showSecrets, basePath)
	if err != nil {
		return err
	}
	cand, err := loadSide(ctx, e, pc, rules, o.showSecrets, candPath)
	if err != nil {
		return err
	}
	res, err := diff.Compare(base, cand, opts)
	if err != nil {
		return usageErr("%v", err)
	}
	res.Baseline, res.Candidate = basePath, candPath
	switch o.output {
	case "json":
		err = res.WriteJSON(e.stdout)
	case "junit":
		err = res.WriteJUnit(e.stdout)
	default:
		var color bool
		if color, err = useColor(e, o.color, e.stdout); err != nil {
			return err
		}
		err = res.WriteText(e.stdout, diff.TextOptions{Color: color})
	}
	if err != nil {
		return &exitError{code: ExitDiffError, err: err}
	}
	if !res.Same() {
		return &exitError{code: ExitDiffDifferent, err: errSilent}
	}
	return nil
}

// updateGolden writes the candidate's transcript over the baseline, which
// must be a transcript or not exist (a capture is never overwritten).
func updateGolden(ctx context.Context, e *env, pc pipelineConfig, rules map[string]diff.Mode, o *diffOptions, basePath, candPath string) error {
	if basePath == "-" {
		return usageErr("--update: BASELINE must be a file, not stdin")
	}
	if f, err := os.Open(basePath); err == nil {
		isT := diff.IsTranscript(bufio.NewReader(f))
		f.Close()
		if !isT {
			return usageErr("--update: %s is not a transcript (a capture is never overwritten)", basePath)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return inputErr(basePath, err)
	}
	cand, err := loadSide(ctx, e, pc, rules, o.showSecrets, candPath)
	if err != nil {
		return err
	}
	if err := diff.WriteFile(basePath, cand); err != nil {
		return &exitError{code: ExitDiffError, err: err}
	}
	n := 0
	for _, s := range cand.Streams {
		n += len(s.Commands)
	}
	fmt.Fprintf(e.stderr, "pulsarscope diff: wrote %s from %s (%d streams, %d commands)\n", basePath, candPath, len(cand.Streams), n)
	return nil
}

// loadSide reads a transcript, or decodes a capture through the one decode
// path (runFiles) into a transcript recorder behind a tracker.
func loadSide(ctx context.Context, e *env, pc pipelineConfig, rules map[string]diff.Mode, showSecrets bool, name string) (*diff.Transcript, error) {
	var br *bufio.Reader
	if name == "-" {
		br = bufio.NewReader(e.stdin)
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, inputErr(name, err)
		}
		defer f.Close()
		br = bufio.NewReader(f)
	}
	if diff.IsTranscript(br) {
		t, err := diff.ReadTranscript(br)
		if err != nil {
			return nil, &exitError{code: ExitDiffError, err: fmt.Errorf("%s: %w", name, err)}
		}
		return t, nil
	}
	rec := diff.NewRecorder(rules, showSecrets)
	// Summarised batch entries need no entry metadata decoded.
	pc.decode.LazyEntryMetadata = rules[diff.PseudoEntries] == diff.Summarise
	sub := *e
	if name == "-" {
		sub.stdin = br
	}
	if _, err := runFiles(ctx, &sub, []string{name}, pc, track.New(rec, track.Options{}), 0); err != nil {
		return nil, err
	}
	return rec.Transcript(), nil
}

// parsePercent reads "50%" or "50" as 0.5; "" is 0 (off).
func parsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a percentage (e.g. 50%%)", s)
	}
	return v / 100, nil
}

// transcriptSink is 'read -o transcript': it records the tracked frames
// (render.TrackWriter) and writes the transcript at the end.
type transcriptSink struct {
	rec *diff.Recorder
	e   *env
}

func newTranscriptSink(e *env, o *readOptions) *transcriptSink {
	return &transcriptSink{rec: diff.NewRecorder(nil, o.showSecrets), e: e}
}

// FrameInfo records a frame with the tracker's annotations.
func (t *transcriptSink) FrameInfo(f *decode.Frame, info *track.Info) { t.rec.Frame(f, info) }

// Event records a stream event.
func (t *transcriptSink) Event(ev *decode.Event) { t.rec.Event(ev) }

// Finding records a conformance finding.
func (t *transcriptSink) Finding(fd *track.Finding) { t.rec.Finding(fd) }

// Flush writes the transcript.
func (t *transcriptSink) Flush() error {
	_, err := t.rec.Transcript().WriteTo(t.e.stdout)
	return err
}
