package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/spf13/cobra"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/capture/bpf"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/render"
	"github.com/pulsarscope/pulsarscope/track"
)

// captureOptions are the flags of 'capture' (docs/capture.md).
type captureOptions struct {
	read      readOptions
	iface     string
	list      bool
	filter    string
	autostop  []string
	write     string
	ring      []string
	snaplen   int
	bufferMiB int
	noPromisc bool
	tui       bool
	idle      time.Duration
}

// liveOpenHook, when set (tests), is called once the capture is open.
var liveOpenHook func(*capture.Live)

func newCaptureCmd(e *env) *cobra.Command {
	o := &captureOptions{}
	cmd := &cobra.Command{
		Use:   "capture -i IFACE",
		Short: "Capture live on an interface and decode Pulsar frames as they pass (needs root or CAP_NET_RAW)",
		Long: `capture decodes the Pulsar traffic of a network interface live, with the same
decoding and output as 'read'. Only TCP packets of the Pulsar ports (6650,
6651 and --port; every TCP packet with --detect) reach pulsarscope: the kernel
filters the rest. Ctrl-C ends the capture cleanly (exit 0): open streams are
flushed, the summary is printed and the -w file is complete.

Every output of 'read' works live: text and JSON are written as frames pass
(-V, -x, --payload, --events, -Y); -q prints its summary at the end, with a
spinner of the bytes captured on a terminal (--progress); -o transcript is a
sorted whole-capture document, so it is written when the capture ends (bound
it with -a or -c: it is kept in memory). -o stats (-o stats-json) prints
the report of 'stats' when the capture ends, with the kernel's counters in
its Capture table. --tui shows the frames in the terminal UI instead. A
pcapng -w file ends with the kernel's counters (an Interface Statistics
Block, as dumpcap writes one), which 'stats' shows. A connection without
packets for --idle-timeout is closed and its unanswered requests reported
while the capture goes on.

Backend: ` + backendHelp() + `. See docs/capture.md.`,
		Example: `  sudo pulsarscope capture -D
  sudo pulsarscope capture -i lo
  sudo pulsarscope capture -i any -f 'host 10.0.0.5' -w pulsar.pcapng
  sudo pulsarscope capture -i eth0 --port 6652 -a duration:60 -q
  sudo pulsarscope capture -i eth0 -a duration:60 -o stats
  sudo pulsarscope capture -i eth0 -w ring.pcap -b filesize:100000,files:10 -q
  sudo pulsarscope capture -i lo --tui`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCapture(cmd.Context(), e, o)
		},
	}
	addReadFlags(cmd, &o.read)
	f := cmd.Flags()
	f.Lookup("output").Usage = "output format: text, json (NDJSON, see docs/json.md), transcript (normalised JSON for 'diff', see docs/diff.md), or stats / stats-json (the report of 'stats' with the kernel's counters, tables or JSON, written when the capture ends; see docs/stats.md)"
	f.Lookup("progress").Usage = "with -q, -o stats or -o stats-json, a spinner of the bytes captured on stderr: auto (when stderr is a terminal), always or never"
	f.StringVarP(&o.iface, "interface", "i", "", "interface to capture on: a name, 'any', or a number from -D")
	f.BoolVarP(&o.list, "list-interfaces", "D", false, "list the interfaces and exit")
	f.StringVarP(&o.filter, "capture-filter", "f", "", "capture filter, ANDed with the Pulsar ports (pure-Go build: host, net, port, portrange, tcp, ip, ip6, src/dst, and/or/not, parentheses)")
	f.StringArrayVarP(&o.autostop, "autostop", "a", nil, "stop after duration:SECONDS (repeatable)")
	f.StringVarP(&o.write, "write", "w", "", "also write the raw packets to this file (pcapng if it ends in .pcapng, else pcap; mode 0600)")
	f.StringArrayVarP(&o.ring, "ring-buffer", "b", nil, "with -w: ring buffer, filesize:KB and files:N (comma-separated or repeated)")
	f.IntVarP(&o.snaplen, "snapshot-length", "s", 262144, "bytes kept of each packet")
	f.IntVarP(&o.bufferMiB, "buffer-size", "B", 16, "kernel capture buffer in MiB")
	f.BoolVarP(&o.noPromisc, "no-promiscuous-mode", "p", false, "do not put the interface into promiscuous mode")
	// Read flags that make no sense live (still parsed, refused when set).
	for _, name := range []string{"two-pass"} {
		if f.Lookup(name) != nil {
			f.MarkHidden(name)
		}
	}
	f.DurationVar(&o.idle, "idle-timeout", reassembly.DefaultIdleTimeout, "close a connection after this long without packets (its unanswered requests are then reported), while the capture goes on")
	f.BoolVar(&o.tui, "tui", false, "show the frames live in the terminal UI (docs/tui.md) instead of printing them; q quits")
	return cmd
}

func backendHelp() string {
	switch capture.LiveBackend {
	case "afpacket":
		return "AF_PACKET (pure Go, Linux) with a kernel BPF filter"
	case "libpcap":
		return "libpcap (built with -tags pcap)"
	}
	return "none on this system (build with -tags pcap for libpcap)"
}

// autostop is the parsed -a.
func parseAutostop(args []string) (time.Duration, error) {
	var d time.Duration
	for _, a := range args {
		for _, part := range strings.Split(a, ",") {
			k, v, ok := strings.Cut(part, ":")
			if !ok || k != "duration" {
				return 0, usageErr("-a %q: expected duration:SECONDS", part)
			}
			s, err := strconv.ParseFloat(v, 64)
			if err != nil || s <= 0 {
				return 0, usageErr("-a %q: the duration must be a positive number of seconds", part)
			}
			d = time.Duration(s * float64(time.Second))
		}
	}
	return d, nil
}

func parseRing(args []string) (size int64, files int, err error) {
	for _, a := range args {
		for _, part := range strings.Split(a, ",") {
			k, v, ok := strings.Cut(part, ":")
			n, perr := strconv.ParseInt(v, 10, 64)
			if !ok || perr != nil || n <= 0 {
				return 0, 0, usageErr("-b %q: expected filesize:KB or files:N with a positive number", part)
			}
			switch k {
			case "filesize":
				size = n * 1000 // tshark's kB
			case "files":
				files = int(n)
			default:
				return 0, 0, usageErr("-b %q: supported: filesize:KB, files:N", part)
			}
		}
	}
	if files > 0 && size == 0 {
		return 0, 0, usageErr("-b files:%d needs filesize:KB", files)
	}
	return size, files, nil
}

func runCapture(ctx context.Context, e *env, o *captureOptions) error {
	if o.list {
		ifs, err := capture.LiveInterfaces()
		if err != nil {
			return &exitError{code: ExitInput, err: fmt.Errorf("listing interfaces: %v", err)}
		}
		for i, it := range ifs {
			fmt.Fprintf(e.stdout, "%d. %s", i+1, it.Name)
			if it.Description != "" {
				fmt.Fprintf(e.stdout, " (%s)", it.Description)
			}
			if len(it.Addresses) > 0 {
				fmt.Fprintf(e.stdout, " %s", strings.Join(it.Addresses, " "))
			}
			if len(it.Flags) > 0 {
				fmt.Fprintf(e.stdout, " [%s]", strings.Join(it.Flags, ", "))
			}
			fmt.Fprintln(e.stdout)
		}
		return nil
	}
	ro := &o.read
	if o.iface == "" {
		return usageErr("capture needs an interface: -i NAME, -i any (pulsarscope capture -D lists them)")
	}
	if n, err := strconv.Atoi(o.iface); err == nil {
		ifs, lerr := capture.LiveInterfaces()
		if lerr != nil || n < 1 || n > len(ifs) {
			return usageErr("-i %d: no such interface number (pulsarscope capture -D lists them)", n)
		}
		o.iface = ifs[n-1].Name
	}
	duration, err := parseAutostop(o.autostop)
	if err != nil {
		return err
	}
	ringSize, ringFiles, err := parseRing(o.ring)
	if err != nil {
		return err
	}
	if ringSize > 0 && o.write == "" {
		return usageErr("-b needs -w FILE")
	}
	if o.write == "-" {
		return usageErr("-w -: writing packets to standard output is not supported (the decoded frames go there)")
	}
	if ro.count < 0 {
		return usageErr("-c %d: the count must be 0 (no limit) or more", ro.count)
	}
	if o.snaplen <= 0 || o.bufferMiB <= 0 {
		return usageErr("-s and -B must be positive")
	}
	pc, err := newPipelineConfig(ro.maxFrameSize, ro.ports, ro.detect)
	if err != nil {
		return err
	}
	if err := ro.limits.apply(&pc); err != nil {
		return err
	}
	if o.idle <= 0 {
		return usageErr("--idle-timeout %v: must be positive (e.g. 30s, 2m)", o.idle)
	}
	pc.assemble.IdleTimeout = o.idle
	pc.idle = &idleTicker{}
	if ro.twoPass {
		return usageErr("-2: a live capture cannot be read twice (capture with -w, then read -2 the file)")
	}
	// The output: read's (newOutput), fed by a tracker that gives up on
	// requests unanswered for liveRequestTimeout; text and JSON are
	// written out as they come (liveFlusher).
	var (
		out     *output
		tr      *track.Tracker
		flusher *liveFlusher
		report  *liveStatsReport // -o stats, -o stats-json
	)
	switch {
	case o.tui:
		if err := tuiConflicts(ro); err != nil {
			return err
		}
	case ro.output == "stats" || ro.output == "stats-json":
		if report, err = newLiveStatsReport(e, ro, &pc); err != nil {
			return err
		}
		tr = track.New(report.sink, track.Options{MaxPending: pc.maxPending, KeepAlive: pc.keepAlive, RequestTimeout: liveRequestTimeout})
	default:
		if out, err = newOutput(e, ro, &pc); err != nil {
			return err
		}
		sink := out.sink
		if out.streams {
			flusher = &liveFlusher{next: sink, flush: out.flush}
			sink = flusher
		}
		tr = track.New(sink, track.Options{MaxPending: pc.maxPending, KeepAlive: pc.keepAlive, RequestTimeout: liveRequestTimeout})
	}

	// The kernel filter: the Pulsar ports (and TLS port), or all of TCP
	// with --detect.
	var ports []uint16
	if !ro.detect {
		ports = append(ports, pc.assemble.Ports...)
		ports = append(ports, reassembly.DefaultTLSPort)
	}
	var dumper *capture.Dumper
	lopts := capture.LiveOptions{
		Interface: o.iface, Ports: ports, Filter: o.filter, Snaplen: o.snaplen,
		BufferSize: o.bufferMiB << 20, NoPromiscuous: o.noPromisc,
		// Idle: the file stays readable while nothing arrives, and idle
		// connections are closed without waiting for a packet.
		Idle: func() {
			if dumper != nil {
				dumper.Flush()
			}
			pc.idle.tick()
			flusher.idle()
		},
	}
	live, err := capture.OpenLive(lopts)
	if err != nil {
		return liveErr(o.iface, err)
	}
	defer live.Close()
	var raw capture.RawSource = live
	if o.write != "" {
		// With the kernel's counters: each pcapng file ends with an
		// Interface Statistics Block, as dumpcap writes.
		dumper, err = capture.NewDumper(capture.DumpOptions{Path: o.write, LinkType: live.LinkType(),
			Snaplen: o.snaplen, Interface: o.iface, FileSize: ringSize, Files: ringFiles, Stats: live.Stats})
		if err != nil {
			return &exitError{code: ExitInput, err: fmt.Errorf("-w: %v", err)}
		}
		raw = capture.Tee(live, dumper)
	}
	// As tshark and dumpcap do: the capture is open, packets are kept
	// from now on.
	fmt.Fprintf(e.stderr, "Capturing on '%s'\n", render.Safe(o.iface))
	if liveOpenHook != nil {
		liveOpenHook(live)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if duration > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, duration)
		defer stop()
	}
	if o.tui {
		// The TUI runs until q (or -a): it stops the capture itself.
		err := runCaptureTUI(ctx, e, o.iface, live, raw, pc, ro.showSecrets)
		if dumper != nil {
			if werr := dumper.Close(); werr != nil && err == nil {
				err = &exitError{code: ExitInput, err: fmt.Errorf("-w: %v", werr)}
			}
		}
		return err
	}
	// Whatever ends the run (Ctrl-C, -a, -c) stops the socket's reads; the
	// pipeline then sees the end of input and flushes every stream.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			live.Stop()
		case <-done:
		}
	}()
	ls := &limitSink{Sink: tr, max: ro.count, cancel: cancel}
	if pc.progress != nil {
		// -q on a terminal: bytes captured and the rate, on stderr.
		raw = countingRaw{raw, &pc.progress.read}
		pc.progress.start(o.iface, -1)
	}
	src := capture.NewSource(o.iface, raw)
	start := time.Now()
	res, runErr := runSource(ctx, src, pc, ls)
	elapsed := time.Since(start)
	pc.progress.end()
	if ctx.Err() != nil {
		runErr = nil // stopped by Ctrl-C, -a or -c: a normal end for a capture
	}
	// The kernel's final counters, the same for the summary, the -w
	// file's Interface Statistics Block and the stats report.
	live.Close()
	ks, _ := live.Stats()
	var werr error
	if dumper != nil {
		werr = dumper.Close()
	}
	var ferr error
	if report != nil {
		ferr = report.write(e, o.iface, src.InterfaceStats())
	} else {
		ferr = out.finish()
	}
	problems := ls.problems + tr.Problems()
	summary := e.stderr
	if ro.quiet {
		summary = e.stdout
	}
	fmt.Fprintf(summary, "capture %s: %d packets captured (%d bytes) in %.1f s, %d received by filter, %d dropped by kernel; %d frames, %d problems\n",
		o.iface, res.capture.Packets, res.capture.Bytes, elapsed.Seconds(), ks.Received, ks.Dropped, ls.n, problems)
	if runErr != nil {
		return liveErr(o.iface, runErr)
	}
	if werr != nil {
		return &exitError{code: ExitInput, err: fmt.Errorf("-w: %v", werr)}
	}
	if ferr != nil && !errors.Is(ferr, syscall.EPIPE) {
		return &exitError{code: ExitInput, err: fmt.Errorf("writing output: %w", ferr)}
	}
	if ro.strict && problems > 0 {
		fmt.Fprintf(e.stderr, "pulsarscope: %d problem(s) found (--strict)\n", problems)
		return &exitError{code: ExitProblems, err: errSilent}
	}
	return nil
}

// tuiConflicts refuses the output flags that --tui replaces.
func tuiConflicts(o *readOptions) error {
	for _, c := range []struct {
		set  bool
		flag string
	}{
		{o.output != "text", "-o"}, {o.quiet, "-q"}, {o.verbose, "-V"}, {o.hex, "-x"},
		{o.payload, "--payload"}, {o.events, "--events"}, {o.filter != "", "-Y (type the filter in the TUI: f)"},
		{o.count > 0, "-c"}, {o.strict, "--strict"},
	} {
		if c.set {
			return usageErr("--tui shows the frames in the terminal UI: %s does not apply", c.flag)
		}
	}
	return nil
}

// countingRaw counts the bytes a live capture reads, for the -q progress
// spinner.
type countingRaw struct {
	capture.RawSource
	n *atomic.Int64
}

func (c countingRaw) ReadRaw() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	data, ci, lt, err := c.RawSource.ReadRaw()
	c.n.Add(int64(len(data)))
	return data, ci, lt, err
}

// InterfaceStats returns the capture counters of the source it wraps
// (capture.Source.InterfaceStats asks its RawSource for them).
func (c countingRaw) InterfaceStats() []capture.InterfaceStats {
	return capture.InterfaceStatsOf(c.RawSource)
}

// liveErr words a live-capture failure: what, where, what to do.
func liveErr(iface string, err error) error {
	switch {
	case errors.Is(err, capture.ErrPermission):
		return &exitError{code: ExitInput, err: fmt.Errorf("capture on %s: permission denied: run as root (sudo), or grant the capability once: sudo setcap cap_net_raw,cap_net_admin=eip $(which pulsarscope)", iface)}
	case errors.Is(err, bpf.ErrUnsupported):
		return usageErr("-f: %v", err)
	case errors.Is(err, capture.ErrNoInterface), errors.Is(err, capture.ErrLiveUnsupported):
		return &exitError{code: ExitInput, err: err}
	case errors.Is(err, io.EOF):
		return nil
	}
	return &exitError{code: ExitInput, err: fmt.Errorf("capture on %s: %v", iface, err)}
}
