package render

import (
	"fmt"
	"strconv"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track"
)

// TrackWriter is a writer that can show the tracker's annotations: Text and JSON.
type TrackWriter interface {
	FrameInfo(f *decode.Frame, info *track.Info)
	Event(e *decode.Event)
	Finding(fd *track.Finding)
}

// ForTrack adapts a TrackWriter to track.Sink.
func ForTrack(w TrackWriter) track.Sink { return trackAdapter{w} }

type trackAdapter struct{ w TrackWriter }

func (a trackAdapter) Frame(f *decode.Frame, info *track.Info) { a.w.FrameInfo(f, info) }
func (a trackAdapter) Event(e *decode.Event)                   { a.w.Event(e) }
func (a trackAdapter) Finding(fd *track.Finding)               { a.w.Finding(fd) }

func appendLink(b []byte, key string, l *track.Link) []byte {
	b = appendKey(b, key)
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, int64(l.N), 10)
	b = append(b, `,"type":`...)
	b = appendString(b, l.Type.String())
	b = append(b, `,"latency_us":`...)
	b = strconv.AppendInt(b, l.Latency.Microseconds(), 10)
	return append(b, '}')
}

func appendInts(b []byte, key string, v []int) []byte {
	b = appendKey(b, key)
	b = append(b, '[')
	for i, n := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, ']')
}

func appendStringKey(b []byte, key, v string, show bool) []byte {
	v = RedactedDetail(v, show)
	if v == "" {
		return b
	}
	b = appendKey(b, key)
	return appendString(b, v)
}

// appendInfo writes the tracker's annotations of a frame (docs/json.md).
func appendInfo(b []byte, info *track.Info, show bool) []byte {
	if info.Request != nil {
		b = appendLink(b, "request", info.Request)
	}
	if info.Response != nil {
		b = appendLink(b, "response", info.Response)
	}
	if info.Redirect != nil {
		b = appendLink(b, "redirected_by", info.Redirect)
	}
	if p := info.Producer; p != nil {
		b = appendStringKey(b, "topic", p.Topic, show)
		b = appendStringKey(b, "producer_name", p.Name, show)
	}
	if c := info.Consumer; c != nil {
		b = appendStringKey(b, "topic", c.Topic, show)
		b = appendStringKey(b, "subscription", c.Subscription, show)
		b = appendStringKey(b, "sub_type", c.SubType, show)
		b = appendStringKey(b, "consumer_name", c.Name, show)
	}
	if len(info.Acks) > 0 {
		b = appendInts(b, "acks", info.Acks)
	}
	if len(info.AckedBy) > 0 {
		b = appendInts(b, "acked_by", info.AckedBy)
	}
	if info.RedeliveryOf > 0 {
		b = appendKey(b, "redelivery_of")
		b = strconv.AppendInt(b, int64(info.RedeliveryOf), 10)
	}
	b = appendStringKey(b, "error", info.Error, show)
	return appendConformance(b, info.Problems, show)
}

// appendConformance writes the tracker's problems, kept apart from the
// decoder's "problems" (docs/json.md).
func appendConformance(b []byte, ps []decode.Problem, show bool) []byte {
	return appendProblemList(b, "conformance", ps, show)
}

// Finding writes a conformance finding as an event record of kind
// "conformance" (docs/json.md).
func (j *JSON) Finding(fd *track.Finding) {
	b := append(j.b[:0], `{"event":"conformance"`...)
	b = appendWhere(b, fd.Time, connLike{fd.Conn.ID, fd.Conn.Client, fd.Conn.Server}, fmtDir{fd.Dir != 0, fd.Dir.String()})
	if fd.Frame > 0 {
		b = appendKey(b, "frame")
		b = strconv.AppendInt(b, int64(fd.Frame), 10)
		b = appendKey(b, "type")
		b = appendString(b, fd.Type.String())
	}
	b = appendConformance(b, []decode.Problem{fd.Problem}, j.opts.ShowSecrets)
	b = appendProblems(b, nil, j.opts.ShowSecrets)
	b = append(b, '}', '\n')
	j.write(b)
}

// Finding writes a conformance finding as a line of its own (always shown).
func (t *Text) Finding(fd *track.Finding) {
	src, dst := fd.Conn.Client, fd.Conn.Server
	if fd.Dir != 0 {
		src, dst = dst, src
	}
	fmt.Fprintf(t.w, "%6s %10.6f #%-3d %21s → %-21s ", "-", t.rel(fd.Time), fd.Conn.ID, src, dst)
	t.event.Fprintf(t.w, "%-30s ", "(conformance)")
	if fd.Frame > 0 {
		fmt.Fprintf(t.w, "frame=%d %s ", fd.Frame, fd.Type)
	}
	t.problem.Fprintf(t.w, "[%s: %s]", fd.Problem.Code, t.clean(fd.Problem.Detail))
	t.w.WriteByte('\n')
}

// appendTrackLine is the -V line of the tracker's annotations.
func appendTrackLine(b []byte, info *track.Info, showSecrets bool) []byte {
	clean := func(s string) string { return Safe(RedactedDetail(s, showSecrets)) }
	b = append(b, "    track:"...)
	link := func(name string, l *track.Link) {
		b = fmt.Appendf(b, " %s=#%d(%s, %s)", name, l.N, l.Type, l.Latency)
	}
	if info.Request != nil {
		link("request", info.Request)
	}
	if info.Response != nil {
		link("response", info.Response)
	}
	if info.Redirect != nil {
		link("redirected_by", info.Redirect)
	}
	if p := info.Producer; p != nil {
		b = fmt.Appendf(b, " topic=%s producer=%s", clean(p.Topic), clean(p.Name))
	}
	if c := info.Consumer; c != nil {
		b = fmt.Appendf(b, " topic=%s subscription=%s(%s) consumer=%s permits=%d", clean(c.Topic), clean(c.Subscription), c.SubType, clean(c.Name), c.Permits)
	}
	if len(info.Acks) > 0 {
		b = fmt.Appendf(b, " acks=%v", info.Acks)
	}
	if len(info.AckedBy) > 0 {
		b = fmt.Appendf(b, " acked_by=%v", info.AckedBy)
	}
	if info.RedeliveryOf > 0 {
		b = fmt.Appendf(b, " redelivery_of=#%d", info.RedeliveryOf)
	}
	return append(b, '\n')
}
