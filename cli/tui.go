package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track"
	"github.com/pulsarscope/pulsarscope/tui"
)

// tuiOptions are the flags of 'tui'.
type tuiOptions struct {
	maxFrameSize string
	ports        []uint
	detect       bool
	showSecrets  bool
	spillDir     string
}

func newTUICmd(e *env) *cobra.Command {
	o := &tuiOptions{}
	cmd := &cobra.Command{
		Use:   "tui FILE",
		Short: "Browse a capture interactively: timeline, decoded tree, hex, filter, pairs (docs/tui.md)",
		Long: `tui shows every Pulsar frame of a capture in a scrollable timeline, with the
selected frame's decoded tree and hex bytes, a display filter (docs/filters.md),
search, request/response pairs and latency, and connection, statistics and
problem views. Rows appear while the file is read. Press ? for the keys.
NO_COLOR turns colors off.`,
		Example: `  pulsarscope tui testdata/pcaps/basic.pcap
  pulsarscope tui --detect capture.pcapng.gz`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTUI(cmd.Context(), e, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.maxFrameSize, "max-frame-size", "5MiB", "largest plausible frame; larger claimed sizes are a frame-too-large problem")
	f.UintSliceVar(&o.ports, "port", nil, "extra Pulsar server port (repeatable; 6650 is always one, 6651 is TLS)")
	f.BoolVar(&o.detect, "detect", false, "find Pulsar on any TCP port from the content of the first bytes")
	f.BoolVar(&o.showSecrets, "show-secrets", false, "show auth_data and tokens instead of redacting them")
	f.StringVar(&o.spillDir, "spill-dir", "", "directory for the temporary file holding frame bytes (default: the system's)")
	return cmd
}

func runTUI(ctx context.Context, e *env, o *tuiOptions, name string) error {
	pc, err := newPipelineConfig(o.maxFrameSize, o.ports, o.detect)
	if err != nil {
		return err
	}
	pc.decode.KeepRaw = true
	pc.decode.LazyEntryMetadata = true // neither the tracker nor the index reads entry metadata
	// Open before the screen changes, so that a bad path is reported as
	// by 'read'.
	var cs *capture.Source
	if name == "-" {
		cs, err = capture.OpenReader("stdin", e.stdin)
	} else {
		cs, err = capture.Open(name)
	}
	if err != nil {
		return inputErr(name, err)
	}
	defer cs.Close()
	src := &fileSource{name: name, src: cs, pc: pc}
	err = tui.Run(ctx, src, tui.Options{
		Decode:      pc.decode,
		ShowSecrets: o.showSecrets,
		NoColor:     e.getenv("NO_COLOR") != "",
		SpillDir:    o.spillDir,
	})
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		return &exitError{code: ExitInput, err: err}
	}
	return err
}

// fileSource is a capture file (or stdin) as a tui.Source, decoded by the
// shared path (runSource).
type fileSource struct {
	name string
	src  *capture.Source
	pc   pipelineConfig
}

func (s *fileSource) Name() string  { return s.name }
func (s *fileSource) Live() bool    { return false }
func (s *fileSource) Drops() uint64 { return 0 }

func (s *fileSource) Run(ctx context.Context, sink decode.Sink) error {
	if _, err := runSource(ctx, s.src, s.pc, sink); err != nil {
		if ctx.Err() != nil {
			return nil // the user quit while the file was being read
		}
		return inputErr(s.name, err)
	}
	return nil
}

// liveTUISource is a live capture as a tui.Source, for 'capture --tui'.
type liveTUISource struct {
	name string
	live *capture.Live
	raw  capture.RawSource // live, or live teed to a -w dumper
	pc   pipelineConfig
	res  runResult // set when Run returns
}

func (s *liveTUISource) Name() string { return s.name }
func (s *liveTUISource) Live() bool   { return true }

// Drops returns the kernel's drop counter (safe while Run runs).
func (s *liveTUISource) Drops() uint64 {
	st, _ := s.live.Stats()
	return st.Dropped
}

// Run decodes the capture until ctx is cancelled (the user quits).
func (s *liveTUISource) Run(ctx context.Context, sink decode.Sink) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			s.live.Stop()
		case <-done:
		}
	}()
	var err error
	s.res, err = runSource(ctx, capture.NewSource(s.name, s.raw), s.pc, sink)
	if ctx.Err() != nil {
		return nil // quitting is the normal end of a live capture
	}
	if err != nil {
		return liveErr(s.name, err)
	}
	return nil
}

// runCaptureTUI shows a live capture in the TUI (capture -i IF --tui):
// capture.go calls it with the opened capture instead of running its
// text or JSON output. Quitting (q) or the end of ctx (-a) ends the
// capture; its summary is printed on stderr once the terminal is restored.
func runCaptureTUI(ctx context.Context, e *env, iface string, live *capture.Live, raw capture.RawSource, pc pipelineConfig, showSecrets bool) error {
	pc.decode.KeepRaw = true
	pc.decode.LazyEntryMetadata = true
	src := &liveTUISource{name: iface, live: live, raw: raw, pc: pc}
	err := tui.Run(ctx, src, tui.Options{
		Decode:      pc.decode,
		Track:       track.Options{RequestTimeout: liveRequestTimeout, MaxPending: pc.maxPending, KeepAlive: pc.keepAlive},
		ShowSecrets: showSecrets,
		NoColor:     e.getenv("NO_COLOR") != "",
	})
	live.Close()
	ks, _ := live.Stats()
	fmt.Fprintf(e.stderr, "capture %s: %d packets captured (%d bytes), %d received by filter, %d dropped by kernel\n",
		iface, src.res.capture.Packets, src.res.capture.Bytes, ks.Received, ks.Dropped)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		return &exitError{code: ExitInput, err: err}
	}
	return err
}

// liveRequestTimeout gives up on unanswered requests of a live capture
// (a file waits for the end of the connection instead).
const liveRequestTimeout = 30 * time.Second
