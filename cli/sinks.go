package cli

import (
	"fmt"
	"io"
	"sort"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/render"
	"github.com/pulsarscope/pulsarscope/track"
)

func newTextSink(e *env, o *readOptions, color bool) *render.Text {
	return render.NewText(e.stdout, render.TextOptions{
		Color: color, Verbose: o.verbose, Hex: o.hex, Payload: o.payload,
		ShowSecrets: o.showSecrets, Events: o.events,
	})
}

func newJSONSink(e *env, o *readOptions) *render.JSON {
	return render.NewJSON(e.stdout, render.JSONOptions{ShowSecrets: o.showSecrets, Payload: o.payload})
}

// quietSink counts frames and problems and prints one summary line (-q).
type quietSink struct {
	w        io.Writer
	frames   int
	bytes    int64
	problems map[string]int
	evicted  int // connections closed by the table limit (--max-conns)
}

// FrameInfo counts a frame and its decode and conformance problems.
func (q *quietSink) FrameInfo(f *decode.Frame, info *track.Info) {
	q.frames++
	q.bytes += int64(f.Size - f.Missing)
	for _, p := range f.Problems {
		q.problems[p.Code]++
	}
	if info == nil {
		return
	}
	for _, p := range info.Problems {
		q.problems[p.Code]++
	}
}

// Frame counts an untracked frame (decode.Sink).
func (q *quietSink) Frame(f *decode.Frame) { q.FrameInfo(f, nil) }

// Finding counts a conformance finding.
func (q *quietSink) Finding(fd *track.Finding) { q.problems[fd.Problem.Code]++ }

func (q *quietSink) Event(e *decode.Event) {
	if e.Kind == decode.EventClose && e.Detail == "evicted" {
		q.evicted++
	}
	for _, p := range e.Problems {
		q.problems[p.Code]++
	}
}

func (q *quietSink) Flush() error {
	codes := make([]string, 0, len(q.problems))
	total := 0
	for c, n := range q.problems {
		codes = append(codes, fmt.Sprintf("%s=%d", c, n))
		total += n
	}
	sort.Strings(codes)
	evicted := ""
	if q.evicted > 0 {
		evicted = fmt.Sprintf(", %d connections evicted (--max-conns)", q.evicted)
	}
	_, err := fmt.Fprintf(q.w, "%d frames, %d bytes in frames, %d problems %v%s\n", q.frames, q.bytes, total, codes, evicted)
	return err
}
