package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pulsarscope/pulsarscope/render"
	"github.com/pulsarscope/pulsarscope/track"
	"github.com/pulsarscope/pulsarscope/track/stats"
)

// statsOptions are the flags of 'stats'.
type statsOptions struct {
	output       string
	filter       string
	onePass      bool
	twoPass      bool
	payloads     bool
	maxFrameSize string
	ports        []uint
	detect       bool
	progress     string
	showSecrets  bool
	limits       limitOptions
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
	f.BoolVarP(&o.onePass, "one-pass", "1", false, "with -Y, read the input once (requests then lack their response for the filter)")
	f.BoolVarP(&o.twoPass, "two-pass", "2", false, "read the input twice (the default with -Y): a response numbered before its request, after loss or reordering in the capture, is then paired too, with latency 0")
	f.BoolVar(&o.payloads, "payloads", false, "also decompress payloads and split batches, counting the problems only that finds (batch-count-mismatch, decompression-failed, ...); slower")
	f.StringVar(&o.maxFrameSize, "max-frame-size", "5MiB", "largest plausible frame; larger claimed sizes are a frame-too-large problem")
	f.UintSliceVar(&o.ports, "port", nil, "extra Pulsar server port (repeatable; 6650 is always one, 6651 is TLS)")
	f.BoolVar(&o.detect, "detect", false, "find Pulsar on any TCP port from the content of the first bytes")
	f.StringVar(&o.progress, "progress", "auto", "progress on stderr: auto (when stderr is a terminal), always or never")
	f.BoolVar(&o.showSecrets, "show-secrets", false, "show tokens found in names and versions, and let -Y see secrets' values, instead of redacting them")
	addLimitFlags(f, &o.limits)
	return cmd
}

func runStats(ctx context.Context, e *env, o *statsOptions, files []string) error {
	pc, err := newPipelineConfig(o.maxFrameSize, o.ports, o.detect)
	if err != nil {
		return err
	}
	if err := o.limits.apply(&pc); err != nil {
		return err
	}
	if o.output != "text" && o.output != "json" {
		return usageErr("-o %q: the formats are text and json", o.output)
	}
	flt, err := compileFilter(o.filter, o.showSecrets)
	if err != nil {
		return err
	}
	statsDecoding(&pc, o.payloads)
	if pc.progress, err = newProgress(e, o.progress); err != nil {
		return err
	}
	col := newStatsCollector(&pc) // with each input's capture counters
	out, fs := withFilter(col, flt)
	if o.onePass && o.twoPass {
		return usageErr("-1 and -2: choose one")
	}
	// Two passes: a filter can test a request's response (the first
	// pass's results), and a response numbered before its request (loss,
	// reordering) is paired. One pass, the default without -Y, gives the
	// same tables on a capture without such damage, twice as fast.
	twoPass := o.twoPass || (flt != nil && !o.onePass)
	if _, err := runTracked(ctx, e, files, pc, out, track.Options{}, twoPass, 0); err != nil {
		return err
	}
	if fs != nil && fs.err != nil {
		fmt.Fprintf(e.stderr, "pulsarscope: warning: %s\n", render.SafeLines(fs.err.Error()))
	}
	rep := col.Report()
	rep.PayloadsChecked = o.payloads
	if err := writeStatsReport(e.stdout, rep, o.output == "json", o.showSecrets, files); err != nil {
		return &exitError{code: ExitInput, err: fmt.Errorf("writing output: %w", err)}
	}
	return nil
}

// writeStatsText prints the report as aligned tables (text/tabwriter),
// under a title naming the files read.
func writeStatsText(w io.Writer, r *stats.Report, files []string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	section := func(title string, header string) {
		fmt.Fprintf(tw, "\n== %s\n", title)
		fmt.Fprintln(tw, header)
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = render.Safe(f)
		if f == "-" {
			names[i] = "stdin"
		}
	}
	fmt.Fprintf(tw, "pulsarscope stats: %s\n", strings.Join(names, ", "))
	writeCaptureText(tw, r.Capture)
	section("Commands", "type\tc2s\ts2c\tbytes\t")
	for _, c := range r.Commands {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", c.Type, c.C2S, c.S2C, c.Bytes)
	}
	section("Service response time (µs)", "request\tcount\tmin\tp50\tp90\tp99\tmax\tunanswered\t")
	for _, s := range r.SRT {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t\n", s.Request, s.Count, orDash(s.Count, s.MinUS), orDash(s.Count, s.P50US),
			orDash(s.Count, s.P90US), orDash(s.Count, s.P99US), orDash(s.Count, s.MaxUS), s.Unanswered)
	}
	section("Conversations", "conn\tclient\tserver\tclient version\tserver version\tprotocol c/s\tproducers\tconsumers\ttopics\tframes\tbytes\tduration\t")
	for _, c := range r.Conversations {
		fmt.Fprintf(tw, "#%d\t%s\t%s\t%s\t%s\t%s/%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", c.Conn, c.Client, c.Server, dash(c.ClientVersion), dash(c.ServerVersion),
			proto(c.ClientProtocol), proto(c.ServerProtocol), c.Producers, c.Consumers, len(c.Topics), c.Frames, c.Bytes, time.Duration(c.DurationUS)*time.Microsecond)
	}
	section("Producers", "topic\tname\tmessages\tsends\tbatches\tbytes\tcompression\treceipts\terrors\tp50 µs\tp90 µs\tp99 µs\t")
	for _, p := range r.Producers {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t\n", render.Safe(p.Topic), dash(p.Name), p.Messages, p.Sends, p.Batches, p.Bytes,
			dash(strings.Join(p.Compression, ",")), p.Receipts, p.Errors, orDash(p.Latencies, p.P50US), orDash(p.Latencies, p.P90US), orDash(p.Latencies, p.P99US))
	}
	section("Consumers", "topic\tsubscription\ttype\tname\tpermits\tmessages\tframes\tacks\tacked frames\tredelivered\tredeliver req\t")
	for _, c := range r.Consumers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", render.Safe(c.Topic), render.Safe(c.Subscription), c.SubType, dash(c.Name), c.Permits, c.Messages,
			c.MessageFrames, c.Acks, c.AckedMessages, c.Redelivered, c.RedeliverRequests)
	}
	section("Problems", "code\tcount\tfirst frames\tfirst in streams\t")
	for _, p := range r.Problems {
		where := make([]string, len(p.FirstStreams))
		for i, w := range p.FirstStreams {
			where[i] = w.String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", p.Code, p.Count, dash(strings.Trim(fmt.Sprint(p.FirstFrames), "[]")), dash(strings.Join(where, ", ")))
	}
	// tcp payload is the reassembler's count; ✓ when in frames + lost +
	// skipped + truncated + ignored adds up to it.
	section("Byte accounting", "conn\tdir\tseen\tin frames\tlost\tskipped\ttruncated\tignored\ttcp payload\tbalanced\t")
	for _, s := range r.Streams {
		mark := "✓"
		if !s.Balanced {
			mark = "✗"
		}
		fmt.Fprintf(tw, "#%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", s.Conn, s.Dir, s.Seen, s.InFrames, s.Lost, s.Skipped, s.Truncated, s.Ignored, s.TCPPayload, mark)
	}
	return tw.Flush()
}

// dash shows s (a string from the wire, its control characters escaped)
// or "-" when empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return render.Safe(s)
}

// orDash shows v, or "-" when it was computed from no sample (n == 0).
func orDash(n int, v int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

func proto(v int32) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("v%d", v)
}
