package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track"
	"github.com/pulsarscope/pulsarscope/track/stats"
)

// statsOptions are the flags of 'stats'.
type statsOptions struct {
	output       string
	filter       string
	onePass      bool
	maxFrameSize string
	ports        []uint
	detect       bool
	progress     string
}

func newStatsCmd(e *env) *cobra.Command {
	o := &statsOptions{}
	cmd := &cobra.Command{
		Use:   "stats FILE...",
		Short: "Summarise captures: commands, response times, conversations, producers, consumers, problems",
		Example: `  pulsarscope stats testdata/pcaps/subscriptions.pcap
  pulsarscope stats -o json capture.pcap | jq .service_response_time
  pulsarscope stats -Y 'topic contains "orders"' capture.pcap`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStats(cmd.Context(), e, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "text", "output format: text (aligned tables) or json")
	f.StringVarP(&o.filter, "display-filter", "Y", "", "count only frames matching this filter (docs/filters.md)")
	f.BoolVarP(&o.onePass, "one-pass", "1", false, "read the input once (requests then lack their response for -Y)")
	f.StringVar(&o.maxFrameSize, "max-frame-size", "5MiB", "largest plausible frame; larger claimed sizes are a frame-too-large problem")
	f.UintSliceVar(&o.ports, "port", nil, "extra Pulsar server port (repeatable; 6650 is always one, 6651 is TLS)")
	f.BoolVar(&o.detect, "detect", false, "find Pulsar on any TCP port from the content of the first bytes")
	f.StringVar(&o.progress, "progress", "auto", "progress on stderr: auto (when stderr is a terminal), always or never")
	return cmd
}

func runStats(ctx context.Context, e *env, o *statsOptions, files []string) error {
	pc, err := newPipelineConfig(o.maxFrameSize, o.ports, o.detect)
	if err != nil {
		return err
	}
	if o.output != "text" && o.output != "json" {
		return usageErr("-o %q: the formats are text and json", o.output)
	}
	flt, err := compileFilter(o.filter)
	if err != nil {
		return err
	}
	col := stats.New()
	var sink track.Sink = col
	if p := newProgress(e, o.progress); p != nil {
		defer p.done()
		sink = &progressSink{Sink: col, p: p}
	}
	out, fs := withFilter(sink, flt)
	if _, err := runTracked(ctx, e, files, pc, out, track.Options{}, !o.onePass, 0); err != nil {
		return err
	}
	if fs != nil && fs.err != nil {
		fmt.Fprintf(e.stderr, "pulsarscope: warning: %v\n", fs.err)
	}
	rep := col.Report()
	if o.output == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return &exitError{code: ExitInput, err: fmt.Errorf("writing output: %w", err)}
		}
		return nil
	}
	if err := writeStatsText(e.stdout, rep); err != nil {
		return &exitError{code: ExitInput, err: fmt.Errorf("writing output: %w", err)}
	}
	return nil
}

// writeStatsText prints the report as aligned tables (text/tabwriter).
func writeStatsText(w io.Writer, r *stats.Report) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	section := func(title string, header string) {
		fmt.Fprintf(tw, "\n== %s\n", title)
		fmt.Fprintln(tw, header)
	}
	fmt.Fprint(tw, "pulsarscope stats")
	section("Commands", "type\tc2s\ts2c\tbytes\t")
	for _, c := range r.Commands {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", c.Type, c.C2S, c.S2C, c.Bytes)
	}
	section("Service response time (µs)", "request\tcount\tmin\tp50\tp90\tp99\tmax\tunanswered\t")
	for _, s := range r.SRT {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.Request, s.Count, s.MinUS, s.P50US, s.P90US, s.P99US, s.MaxUS, s.Unanswered)
	}
	section("Conversations", "conn\tclient\tserver\tclient version\tserver version\tprotocol c/s\tproducers\tconsumers\ttopics\tframes\tbytes\tduration\t")
	for _, c := range r.Conversations {
		fmt.Fprintf(tw, "#%d\t%s\t%s\t%s\t%s\t%s/%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", c.Conn, c.Client, c.Server, dash(c.ClientVersion), dash(c.ServerVersion),
			proto(c.ClientProtocol), proto(c.ServerProtocol), c.Producers, c.Consumers, len(c.Topics), c.Frames, c.Bytes, time.Duration(c.DurationUS)*time.Microsecond)
	}
	section("Producers", "topic\tname\tmessages\tsends\tbatches\tbytes\tcompression\treceipts\terrors\tp50 µs\tp90 µs\tp99 µs\t")
	for _, p := range r.Producers {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t\n", p.Topic, dash(p.Name), p.Messages, p.Sends, p.Batches, p.Bytes,
			dash(strings.Join(p.Compression, ",")), p.Receipts, p.Errors, p.P50US, p.P90US, p.P99US)
	}
	section("Consumers", "topic\tsubscription\ttype\tname\tpermits\tmessages\tframes\tacks\tacked frames\tredelivered\tredeliver req\t")
	for _, c := range r.Consumers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", c.Topic, c.Subscription, c.SubType, dash(c.Name), c.Permits, c.Messages,
			c.MessageFrames, c.Acks, c.AckedMessages, c.Redelivered, c.RedeliverRequests)
	}
	section("Problems", "code\tcount\tfirst frames\t")
	for _, p := range r.Problems {
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", p.Code, p.Count, dash(strings.Trim(fmt.Sprint(p.FirstFrames), "[]")))
	}
	section("Byte accounting", "conn\tdir\tseen\tin frames\tlost\tskipped\ttruncated\tignored\t")
	for _, s := range r.Streams {
		fmt.Fprintf(tw, "#%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.Conn, s.Dir, s.Seen, s.InFrames, s.Lost, s.Skipped, s.Truncated, s.Ignored)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func proto(v int32) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("v%d", v)
}

// progress draws a frame counter on stderr while a long file is read.
type progress struct {
	w      io.Writer
	frames int64
	last   time.Time
	start  time.Time
	shown  bool
}

func newProgress(e *env, mode string) *progress {
	show := mode == "always"
	if mode == "auto" {
		if f, ok := e.stderr.(interface{ Fd() uintptr }); ok {
			show = isatty.IsTerminal(f.Fd())
		}
	}
	if !show {
		return nil
	}
	now := time.Now()
	return &progress{w: e.stderr, start: now, last: now}
}

func (p *progress) tick() {
	p.frames++
	if p.frames&1023 != 0 {
		return
	}
	if now := time.Now(); now.Sub(p.last) > 200*time.Millisecond {
		p.last, p.shown = now, true
		fmt.Fprintf(p.w, "\r%d frames tracked, %s", p.frames, now.Sub(p.start).Round(time.Second))
	}
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// progressSink counts frames for the progress line.
type progressSink struct {
	track.Sink
	p *progress
}

func (s *progressSink) Frame(f *decode.Frame, info *track.Info) {
	s.p.tick()
	s.Sink.Frame(f, info)
}
