package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/pulsarscope/pulsarscope/render"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// pipelineConfig is what every command that reads packets shares.
type pipelineConfig struct {
	decode   decode.Options
	assemble reassembly.Options
	progress *progress // nil: no progress bar
	// idle, when set (live captures), is given the Assembler while
	// runSource runs, so that the capture's Idle callback can advance
	// its clock while no packets arrive.
	idle *idleTicker
	// maxPending is track.Options.MaxPending (--max-pending; 0: default).
	maxPending int
	// keepAlive is track.Options.KeepAlive (--keepalive-timeout; 0: default).
	keepAlive time.Duration
	// sourceDone, when set ('stats'), is called by runFile with each input
	// read to its end, before it is closed (for its capture counters,
	// capture.Source.InterfaceStats); name is the input as given.
	sourceDone func(name string, src *capture.Source)
}

// idleTicker advances a live capture's reassembly clock while no packets
// arrive: capture.LiveOptions.Idle calls tick from ReadRaw, that is on the
// goroutine running the Assembler (inside Assembler.Run), every poll
// timeout (100 ms) without packets. Idle connections are then closed and
// overdue gaps flushed during a long capture, as a packet arriving now
// would do, instead of at its end.
type idleTicker struct{ asm *reassembly.Assembler }

func (t *idleTicker) tick() {
	if t != nil && t.asm != nil {
		t.asm.Tick(time.Now())
	}
}

func newPipelineConfig(maxFrameSize string, ports []uint, detect bool) (pipelineConfig, error) {
	var pc pipelineConfig
	size, err := parseSize(maxFrameSize)
	if err != nil {
		return pc, usageErr("--max-frame-size: %v", err)
	}
	// The flag is the broker's maxMessageSize; a frame may exceed it by the
	// padding the broker's own frame decoder allows (docs/cli.md).
	pc.decode.MaxFrameSize = size + decode.FramePadding
	pc.assemble.Ports = []uint16{6650}
	for _, p := range ports {
		if p == 0 || p > 65535 {
			return pc, usageErr("--port %d: not a TCP port (1-65535)", p)
		}
		pc.assemble.Ports = append(pc.assemble.Ports, uint16(p))
	}
	if detect {
		limit := pc.decode.MaxFrameSize
		pc.assemble.Detect = func(b []byte) bool {
			v, _ := decode.CheckFrame(b, limit)
			return v == decode.Likely
		}
	}
	return pc, nil
}

// errStop ends a run early without error (-c reached).
var errStop = errors.New("frame limit reached")

// limitSink forwards to sink and cancels the run after max frames.
type limitSink struct {
	decode.Sink
	max, n   int
	cancel   context.CancelCauseFunc
	problems int
}

func (l *limitSink) Frame(f *decode.Frame) {
	if l.max > 0 && l.n >= l.max {
		return
	}
	l.n++
	l.problems += len(f.Problems)
	l.Sink.Frame(f)
	if l.max > 0 && l.n >= l.max {
		l.cancel(errStop)
	}
}

func (l *limitSink) Event(e *decode.Event) {
	if l.max > 0 && l.n >= l.max {
		return
	}
	l.problems += len(e.Problems)
	l.Sink.Event(e)
}

// runFiles decodes each file in turn into sink. Each file is its own
// capture: connection and frame numbers start again. It returns the number
// of problems seen and the first input error, already worded for the user.
func runFiles(ctx context.Context, e *env, files []string, pc pipelineConfig, sink decode.Sink, maxFrames int) (problems int, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ls := &limitSink{Sink: sink, max: maxFrames, cancel: cancel}
	for _, name := range files {
		err := runFile(ctx, e, name, pc, ls)
		if errors.Is(context.Cause(ctx), errStop) {
			break // -c reached: not an error, and no further file is read
		}
		if err != nil {
			return ls.problems, err
		}
	}
	return ls.problems, nil
}

func runFile(ctx context.Context, e *env, name string, pc pipelineConfig, sink decode.Sink) error {
	var (
		src *capture.Source
		err error
	)
	switch {
	case pc.progress != nil:
		src, err = pc.progress.open(e, name)
		defer pc.progress.end()
	case name == "-":
		src, err = capture.OpenReader("stdin", e.stdin)
	default:
		src, err = capture.Open(name)
	}
	if err != nil {
		return inputErr(name, err)
	}
	defer src.Close()
	res, err := runSource(ctx, src, pc, sink)
	if n := res.capture.SkippedBlocks; n > 0 {
		fmt.Fprintf(e.stderr, "pulsarscope: warning: %s: %d pcapng packet block(s) skipped, the first at byte %d: the captured length is larger than the block; reading went on with the next block\n", render.Safe(name), n, res.capture.FirstSkippedBlock)
	}
	if n := res.capture.FragmentsLost; n > 0 {
		fmt.Fprintf(e.stderr, "pulsarscope: warning: %s: %d IP fragment datagram(s) could not be put back together (IPv6, incomplete, or contradicting); the TCP bytes they carried are reported as missing\n", render.Safe(name), n)
	}
	if err != nil {
		if ctx.Err() != nil {
			if errors.Is(context.Cause(ctx), errStop) {
				return context.Cause(ctx)
			}
			return &exitError{code: ExitInterrupted, err: fmt.Errorf("%s: interrupted; output so far is complete up to the last frame printed", name)}
		}
		return inputErr(name, err)
	}
	if pc.sourceDone != nil {
		pc.sourceDone(name, src)
	}
	return nil
}

// runResult is what one source's run leaves behind besides its output.
type runResult struct {
	capture    capture.Stats
	reassembly reassembly.Stats
	decode     decode.StreamStats
}

// runSource is the one decode path every input shares (files, stdin, live
// interfaces): packets → TCP reassembly → frame decoding → sink. It returns
// at the end of input, on an error, or when ctx is cancelled, with every
// stream flushed in each case.
func runSource(ctx context.Context, src *capture.Source, pc pipelineConfig, sink decode.Sink) (runResult, error) {
	// Frames are decoded on other goroutines; sink is called from one of
	// them, in order, and is done with when Wait returns.
	sd := decode.NewParallelStreamDecoder(sink, pc.decode, 0)
	if rb := src.ReadBuffers(); rb != nil {
		sd.SetKeeper(rb) // frames are queued without being copied
	}
	asm := reassembly.New(sd, pc.assemble)
	if pc.idle != nil {
		pc.idle.asm = asm
		defer func() { pc.idle.asm = nil }()
	}
	err := asm.Run(ctx, src)
	sd.Wait()
	return runResult{capture: src.Stats(), reassembly: asm.Stats(), decode: sd.Totals()}, err
}

// inputErr words an input failure for the user: what, where, what to do.
func inputErr(name string, err error) error {
	hint := ""
	switch {
	case errors.Is(err, capture.ErrTruncated):
		hint = " (the capture was cut short; every frame before the cut was decoded)"
	case errors.Is(err, capture.ErrNotCapture):
		hint = " (pulsarscope reads pcap and pcapng files, optionally gzip-compressed)"
	case errors.Is(err, capture.ErrEmpty):
		hint = " (nothing to read: was the capture still being written?)"
	case errors.Is(err, capture.ErrIsDirectory):
		hint = " (name a capture file inside it)"
	case errors.Is(err, capture.ErrUnknownLinkType):
		hint = " (supported: Ethernet, Linux SLL/SLL2, raw IP, BSD loopback)"
	case errors.Is(err, fs.ErrPermission):
		hint = " (check the file's permissions, or run with the rights to read it)"
	case errors.Is(err, fs.ErrNotExist):
		hint = " (check the path)"
	}
	var ce *capture.Error
	if errors.As(err, &ce) {
		return &exitError{code: ExitInput, err: fmt.Errorf("%v%s", err, hint)}
	}
	return &exitError{code: ExitInput, err: fmt.Errorf("%s: %v%s", name, err, hint)}
}

// runRead is the 'read' command.
func runRead(ctx context.Context, e *env, o *readOptions, files []string) error {
	pc, err := newPipelineConfig(o.maxFrameSize, o.ports, o.detect)
	if err != nil {
		return err
	}
	if err := o.limits.apply(&pc); err != nil {
		return err
	}
	out, err := newOutput(e, o, &pc)
	if err != nil {
		return err
	}
	if o.count < 0 {
		return usageErr("-c %d: the count must be 0 (no limit) or more", o.count)
	}
	problems, runErr := runTracked(ctx, e, files, pc, out.sink, track.Options{}, o.twoPass, o.count)
	if err := out.finish(); err != nil && runErr == nil {
		if errors.Is(err, syscall.EPIPE) {
			return nil
		}
		return &exitError{code: ExitInput, err: fmt.Errorf("writing output: %w", err)}
	}
	if runErr != nil {
		return runErr
	}
	if o.strict && problems > 0 {
		fmt.Fprintf(e.stderr, "pulsarscope: %d problem(s) found (--strict)\n", problems)
		return &exitError{code: ExitProblems, err: errSilent}
	}
	return nil
}
