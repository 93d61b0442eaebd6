package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track"
	"github.com/pulsarscope/pulsarscope/track/filter"
)

// compileFilter compiles -Y (nil when empty) as a usage error with a caret;
// the filter sees secrets' values only with showSecrets.
func compileFilter(src string, showSecrets bool) (*filter.Filter, error) {
	if src == "" {
		return nil, nil
	}
	f, err := filter.Compile(src)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("-Y: %w", err)}
	}
	return f.ShowSecrets(showSecrets), nil
}

// filterSink passes on what the display filter accepts. Run-time filter
// errors (a type mismatch on some frame) count as no match; the first is
// kept for the user.
type filterSink struct {
	next track.Sink
	f    *filter.Filter
	err  error
}

func (s *filterSink) keep(ok bool, err error) bool {
	if err != nil && s.err == nil {
		s.err = err
	}
	return ok && err == nil
}

func (s *filterSink) Frame(f *decode.Frame, info *track.Info) {
	if s.keep(s.f.Match(f, info)) {
		s.next.Frame(f, info)
	}
}

func (s *filterSink) Event(e *decode.Event) {
	if s.keep(s.f.MatchEvent(e)) {
		s.next.Event(e)
	}
}

func (s *filterSink) Finding(fd *track.Finding) {
	if s.keep(s.f.MatchFinding(fd)) {
		s.next.Finding(fd)
	}
}

// withFilter wraps sink in f (sink itself when f is nil).
func withFilter(sink track.Sink, f *filter.Filter) (track.Sink, *filterSink) {
	if f == nil {
		return sink, nil
	}
	fs := &filterSink{next: sink, f: f}
	return fs, fs
}

// nopTrackSink discards everything (first pass of -2).
type nopTrackSink struct{}

func (nopTrackSink) Frame(*decode.Frame, *track.Info) {}
func (nopTrackSink) Event(*decode.Event)              {}
func (nopTrackSink) Finding(*track.Finding)           {}

// runTracked decodes files through a tracker into sink: one pass, or with
// twoPass a first pass per file that only tracks, then the output pass with
// its results. It returns the decode and conformance problem counts.
func runTracked(ctx context.Context, e *env, files []string, pc pipelineConfig, sink track.Sink, opts track.Options, twoPass bool, maxFrames int) (int, error) {
	if opts.MaxPending == 0 {
		opts.MaxPending = pc.maxPending
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = pc.keepAlive
	}
	if !twoPass {
		pc.progress.setRun(1, 1, len(files), "")
		tr := track.New(sink, opts)
		n, err := runFiles(ctx, e, files, pc, tr, maxFrames)
		return n + tr.Problems(), err
	}
	total := 0
	for _, name := range files {
		path, cleanup, err := rereadable(e, name)
		if err != nil {
			return total, err
		}
		first := opts
		first.Record = true
		pc.progress.setRun(1, 2, 1, name)
		tr1 := track.New(nopTrackSink{}, first)
		pc1 := pc
		pc1.decode.LazyEntryMetadata = true // the tracker reads no entry metadata
		pc1.sourceDone = nil                // the input is reported once, by the second pass
		if _, err := runFiles(ctx, e, []string{path}, pc1, tr1, 0); err != nil {
			cleanup()
			return total, err
		}
		pc.progress.setRun(2, 2, 1, name)
		second := opts
		second.Results = tr1.Results()
		tr2 := track.New(sink, second)
		pc2 := pc
		if done := pc.sourceDone; done != nil {
			// The input as given, not stdin's temporary copy.
			pc2.sourceDone = func(_ string, src *capture.Source) { done(name, src) }
		}
		n, err := runFiles(ctx, e, []string{path}, pc2, tr2, maxFrames)
		cleanup()
		total += n + tr2.Problems()
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// rereadable returns a path that can be read twice: the file itself, or
// stdin spooled to a temporary file.
func rereadable(e *env, name string) (string, func(), error) {
	if name != "-" {
		return name, func() {}, nil
	}
	tmp, err := os.CreateTemp("", "pulsarscope-stdin-*.pcap")
	if err != nil {
		return "", nil, &exitError{code: ExitInput, err: fmt.Errorf("two passes over stdin need a temporary file: %w", err)}
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	if _, err := io.Copy(tmp, e.stdin); err != nil {
		cleanup()
		return "", nil, &exitError{code: ExitInput, err: fmt.Errorf("stdin: spooling for two passes: %w", err)}
	}
	return tmp.Name(), cleanup, nil
}
