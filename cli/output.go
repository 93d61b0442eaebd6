package cli

import (
	"fmt"
	"sync"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/render"
	"github.com/pulsarscope/pulsarscope/track"
)

// output is what 'read' and 'capture' print, built once from the read
// flags by newOutput.
type output struct {
	// sink receives the tracked frames, events and findings: the writer
	// under the display filter (-Y).
	sink track.Sink
	// flush writes out the writer's buffer (the -q summary line and the
	// transcript are written by it).
	flush func() error
	// streams is true for the line-per-record writers (text, JSON), whose
	// buffer may be written out at any time; false for -q and transcript,
	// which write once, at the end.
	streams bool
	e       *env
	fs      *filterSink
}

// finish prints the display filter's run-time warning, if any, and writes
// the output out. Call it once, after the input ended.
func (o *output) finish() error {
	if o.fs != nil && o.fs.err != nil {
		fmt.Fprintf(o.e.stderr, "pulsarscope: warning: %s\n", render.SafeLines(o.fs.err.Error()))
	}
	return o.flush()
}

// newOutput builds the output of read and capture from the read flags: the
// writer (-q; -o text, json or transcript; -V, -x, --payload, --events,
// --color, --show-secrets) under the display filter (-Y). It sets in pc what
// the output needs from the decoder and the input: the raw bytes for -x,
// and for -q lazy entry metadata and the progress bar (--progress).
func newOutput(e *env, o *readOptions, pc *pipelineConfig) (*output, error) {
	pc.decode.KeepRaw = o.hex
	// No output decodes batch entries' metadata up front: the JSON writer
	// encodes it from the raw bytes, -V decodes it on demand, and the
	// tracker, filter and transcript read none of it.
	pc.decode.LazyEntryMetadata = true
	flt, err := compileFilter(o.filter, o.showSecrets)
	if err != nil {
		return nil, err
	}
	out := &output{e: e}
	var w render.TrackWriter
	switch {
	case o.quiet:
		if pc.progress, err = newProgress(e, o.progress); err != nil {
			return nil, err
		}
		q := &quietSink{w: e.stdout, problems: map[string]int{}}
		w, out.flush = q, q.Flush
	case o.output == "text":
		color, err := useColor(e, o.color, e.stdout)
		if err != nil {
			return nil, err
		}
		t := newTextSink(e, o, color)
		w, out.flush, out.streams = t, t.Flush, true
	case o.output == "json":
		j := newJSONSink(e, o)
		w, out.flush, out.streams = j, j.Flush, true
	case o.output == "transcript":
		t := newTranscriptSink(e, o)
		w, out.flush = t, t.Flush
	default:
		return nil, usageErr("-o %q: the formats are text, json and transcript", o.output)
	}
	out.sink, out.fs = withFilter(render.ForTrack(w), flt)
	return out, nil
}

// liveFlushInterval bounds how long a live capture's output waits in the
// writer's buffer.
const liveFlushInterval = 200 * time.Millisecond

// liveFlusher writes a live capture's text or JSON out as it comes: after
// a record when the last write-out is liveFlushInterval old, and from the
// capture's Idle callback (idle), so that the last records of a burst do
// not wait for the next packet. The writer is called from the decoder's
// goroutine and idle from the reader's: a mutex orders them.
type liveFlusher struct {
	mu    sync.Mutex
	next  track.Sink
	flush func() error
	last  time.Time
	dirty bool
}

func (l *liveFlusher) Frame(f *decode.Frame, info *track.Info) {
	l.mu.Lock()
	l.next.Frame(f, info)
	l.wrote()
	l.mu.Unlock()
}

func (l *liveFlusher) Event(e *decode.Event) {
	l.mu.Lock()
	l.next.Event(e)
	l.wrote()
	l.mu.Unlock()
}

func (l *liveFlusher) Finding(fd *track.Finding) {
	l.mu.Lock()
	l.next.Finding(fd)
	l.wrote()
	l.mu.Unlock()
}

func (l *liveFlusher) wrote() {
	l.dirty = true
	if now := time.Now(); now.Sub(l.last) >= liveFlushInterval {
		l.flush() // a write error is kept by the writer and returned at the end
		l.last, l.dirty = now, false
	}
}

// idle writes out what is buffered (nil-safe).
func (l *liveFlusher) idle() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.dirty {
		l.flush()
		l.last, l.dirty = time.Now(), false
	}
	l.mu.Unlock()
}
