package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/capture/bpf"
	"github.com/pulsarscope/pulsarscope/decode"
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
filters the rest. Ctrl-C ends the capture cleanly: open streams are flushed,
the summary is printed and the -w file is complete.

Backend: ` + backendHelp() + `. See docs/capture.md.`,
		Example: `  sudo pulsarscope capture -D
  sudo pulsarscope capture -i lo
  sudo pulsarscope capture -i any -f 'host 10.0.0.5' -w pulsar.pcapng
  sudo pulsarscope capture -i eth0 --port 6652 -a duration:60 -q
  sudo pulsarscope capture -i eth0 -w ring.pcap -b filesize:100000,files:10 -q`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCapture(cmd.Context(), e, o)
		},
	}
	addReadFlags(cmd, &o.read)
	f := cmd.Flags()
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
	for _, name := range []string{"two-pass", "progress"} {
		if f.Lookup(name) != nil {
			f.MarkHidden(name)
		}
	}
	// TODO(--tui): add when the TUI exists.
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
	pc.decode.KeepRaw = ro.hex
	if ro.twoPass {
		return usageErr("-2: a live capture cannot be read twice (capture with -w, then read -2 the file)")
	}
	sink, trackProblems, flush, err := newCaptureOutput(e, ro, &pc)
	if err != nil {
		return err
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
		// Idle: the file stays readable while nothing arrives.
		Idle: func() {
			if dumper != nil {
				dumper.Flush()
			}
		},
	}
	live, err := capture.OpenLive(lopts)
	if err != nil {
		return liveErr(o.iface, err)
	}
	defer live.Close()
	var raw capture.RawSource = live
	if o.write != "" {
		dumper, err = capture.NewDumper(capture.DumpOptions{Path: o.write, LinkType: live.LinkType(),
			Snaplen: o.snaplen, Interface: o.iface, FileSize: ringSize, Files: ringFiles})
		if err != nil {
			return &exitError{code: ExitInput, err: fmt.Errorf("-w: %v", err)}
		}
		raw = capture.Tee(live, dumper)
	}
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
	ls := &limitSink{Sink: sink, max: ro.count, cancel: cancel}
	src := capture.NewSource(o.iface, raw)
	start := time.Now()
	res, runErr := runSource(ctx, src, pc, ls)
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		runErr = nil // stopped by Ctrl-C, -a or -c: a normal end for a capture
	}
	var werr error
	if dumper != nil {
		werr = dumper.Close()
	}
	ferr := flush()
	problems := ls.problems + trackProblems()
	live.Close()
	ks, _ := live.Stats()
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
	if ferr != nil && !errors.Is(ferr, syscallEPIPE) {
		return &exitError{code: ExitInput, err: fmt.Errorf("writing output: %w", ferr)}
	}
	if ro.strict && problems > 0 {
		fmt.Fprintf(e.stderr, "pulsarscope: %d problem(s) found (--strict)\n", problems)
		return &exitError{code: ExitProblems, err: errSilent}
	}
	return nil
}

// newCaptureOutput builds read's output for capture: the same writer
// (-q, -o text|json), display filter (-Y) and tracker. It mirrors runRead
// (kept apart so that read's code stays untouched while it changes; the
// live test checks that both print the same). The returned sink goes
// under limitSink; problems() adds the tracker's conformance problems.
func newCaptureOutput(e *env, o *readOptions, pc *pipelineConfig) (sink decode.Sink, problems func() int, finish func() error, err error) {
	flt, err := compileFilter(o.filter)
	if err != nil {
		return nil, nil, nil, err
	}
	var (
		w     render.TrackWriter
		flush func() error
	)
	switch {
	case o.quiet:
		pc.decode.LazyEntryMetadata = true // the summary reads no entry metadata
		q := &quietSink{w: e.stdout, problems: map[string]int{}}
		w, flush = q, q.Flush
	case o.output == "text":
		color, err := useColor(e, o.color, e.stdout)
		if err != nil {
			return nil, nil, nil, err
		}
		t := newTextSink(e, o, color)
		w, flush = t, t.Flush
	case o.output == "json":
		j := newJSONSink(e, o)
		w, flush = j, j.Flush
	default:
		return nil, nil, nil, usageErr("-o %q: the formats are text and json", o.output)
	}
	out, fs := withFilter(render.ForTrack(w), flt)
	tr := track.New(out, track.Options{})
	finish = func() error {
		if fs != nil && fs.err != nil {
			fmt.Fprintf(e.stderr, "pulsarscope: warning: %v\n", fs.err)
		}
		return flush()
	}
	return tr, tr.Problems, finish, nil
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
