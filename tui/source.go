package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track"
)

// Source delivers decoded frames incrementally: a capture file read to its
// end, or a live interface read until ctx is cancelled.
type Source interface {
	// Name labels the input in the status bar (a file or interface name).
	Name() string
	// Live reports whether frames keep arriving until the user quits.
	Live() bool
	// Run decodes the input into sink, from a single goroutine, and returns
	// at the end of input or when ctx is cancelled. The decoder must keep
	// the frames' bytes (decode.Options.KeepRaw): the TUI spills them.
	// The tracker reads no batch entry metadata, so
	// decode.Options.LazyEntryMetadata makes loading much faster.
	Run(ctx context.Context, sink decode.Sink) error
	// Drops returns the packets the kernel dropped so far (0 for files).
	// It is called from the UI goroutine while Run is running.
	Drops() uint64
}

// Options configure a TUI session.
type Options struct {
	// Decode are the options the frames are decoded again with when shown
	// (MaxFrameSize matters; KeepRaw and Retain are set by the TUI).
	Decode decode.Options
	// Track configure the request/response tracker.
	Track track.Options
	// ShowSecrets shows auth_data and tokens instead of redacting them.
	ShowSecrets bool
	// NoColor renders without colors (NO_COLOR).
	NoColor bool
	// SpillDir is where the frame bytes are spilled ("" for the system's
	// temporary directory).
	SpillDir string
	// Input and Output override the terminal (tests).
	Input  io.Reader
	Output io.Writer
	// Width and Height fix the window size (tests; 0: the terminal's).
	Width, Height int
}

// loadDoneMsg says the Source's Run returned.
type loadDoneMsg struct{ err error }

// Run shows the TUI on the terminal while src delivers frames, until the
// user quits or ctx is cancelled. It returns the Source's error, if any
// (a file that could not be read to its end); quitting early is no error.
func Run(ctx context.Context, src Source, opts Options) error {
	s, err := newSession(src, opts)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	m := newModel(s, opts)
	popts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opts.Input != nil {
		popts = append(popts, tea.WithInput(opts.Input))
	}
	if opts.Output != nil {
		popts = append(popts, tea.WithOutput(opts.Output))
	}
	if opts.Width > 0 && opts.Height > 0 {
		popts = append(popts, tea.WithWindowSize(opts.Width, opts.Height))
	}
	if opts.NoColor {
		popts = append(popts, tea.WithEnvironment(append(os.Environ(), "NO_COLOR=1")))
	}
	p := tea.NewProgram(m, popts...)

	done := make(chan error, 1)
	go func() {
		err := src.Run(ctx, s.collector.sink())
		done <- err
		p.Send(loadDoneMsg{err: err})
	}()
	_, runErr := p.Run()
	// A Source that ended on its own reports its error (a capture that
	// could not be read to its end); one stopped by quitting does not.
	var srcErr error
	select {
	case srcErr = <-done:
	default:
		cancel()
		<-done
	}
	if runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled) && !errors.Is(runErr, context.Canceled) {
		return fmt.Errorf("terminal: %w", runErr)
	}
	return srcErr
}

// session is the data side of a TUI run: index, spill file, collector.
type session struct {
	src       Source
	store     *spill
	index     *Index
	collector *collector
	decOpts   decode.Options
}

func newSession(src Source, opts Options) (*session, error) {
	store, err := newSpill(opts.SpillDir)
	if err != nil {
		return nil, err
	}
	x := newIndex(store)
	d := opts.Decode
	d.KeepRaw, d.Retain = true, false
	// Rows, searches and filters need no batch entry metadata; the detail
	// tree walks the entries' raw metadata itself.
	d.LazyEntryMetadata = true
	return &session{src: src, store: store, index: x, collector: newCollector(x, opts.Track), decOpts: d}, nil
}

func (s *session) close() { s.store.close() }
