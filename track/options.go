package track

import "time"

// Defaults used when Options leaves a field zero.
const (
	// DefaultKeepAlive is how long a PING may wait for its PONG: the
	// broker's default keep-alive timeout (it closes a connection whose
	// PING stays unanswered; keepAliveIntervalSeconds 30, checked at the
	// next interval, so at most 60 s).
	DefaultKeepAlive = 60 * time.Second
	// DefaultMaxPending bounds the requests in flight tracked per connection.
	DefaultMaxPending = 10000
	// DefaultMaxDelivered bounds the delivered message ids remembered per
	// consumer for ack checking.
	DefaultMaxDelivered = 100000
)

// Options configure a Tracker. The zero value is valid for capture files.
type Options struct {
	// RequestTimeout, when positive, gives up on requests (and SENDs)
	// unanswered for longer, in capture time, reporting them unanswered.
	// Live captures set it; for files 0 (the default) waits for the end of
	// the connection.
	RequestTimeout time.Duration
	// KeepAlive is the PING answer timeout. 0 means DefaultKeepAlive.
	KeepAlive time.Duration
	// MaxPending bounds requests and SENDs in flight per connection; the
	// oldest is evicted (and reported) beyond it. 0 means DefaultMaxPending.
	MaxPending int
	// MaxDelivered bounds the message ids remembered per consumer. 0 means
	// DefaultMaxDelivered.
	MaxDelivered int
	// Record makes the Tracker collect Results for a second pass.
	Record bool
	// Results, from a first pass over the same input, adds what later
	// frames revealed (Info.Response, Info.AckedBy, end-of-capture problems)
	// to earlier frames. Findings attached to a frame this way are not
	// passed to Sink.Finding again.
	Results *Results
}

func (o Options) withDefaults() Options {
	if o.KeepAlive <= 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxDelivered <= 0 {
		o.MaxDelivered = DefaultMaxDelivered
	}
	return o
}

// Results is what a first pass learned about earlier frames, by frame number.
type Results struct {
	frames map[int]*later
}

type later struct {
	response *Link
	request  *Link
	ackedBy  []int
	problems []problemRef
}

type problemRef struct {
	code, detail string
}

func (r *Results) at(n int) *later {
	if r.frames == nil {
		r.frames = map[int]*later{}
	}
	l := r.frames[n]
	if l == nil {
		l = &later{}
		r.frames[n] = l
	}
	return l
}

// Len returns the number of frames the results annotate.
func (r *Results) Len() int { return len(r.frames) }
