package track

import (
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// Link points from one frame to another: a response to its request, a
// request to its response.
type Link struct {
	// N is the other frame's number.
	N int
	// Type is the other frame's command type.
	Type pulsarapi.BaseCommand_Type
	// Latency is the time from request to response (never negative).
	Latency time.Duration
}

// Info is what the tracker knows about one frame beyond its bytes. It is
// handed to the Sink with the frame and is only valid during that call.
type Info struct {
	// Request is set on a response (and on a PONG, a SEND_RECEIPT or
	// SEND_ERROR, a CONNECTED, an AUTH_RESPONSE): the request it answers.
	Request *Link
	// Response is set on a request when the tracker runs a second pass
	// (Options.Results): the frame that answered it.
	Response *Link
	// Redirect is set on a LOOKUP that follows a redirect: the
	// LOOKUP_RESPONSE that sent the client here.
	Redirect *Link
	// Producer and Consumer are the entities the frame refers to (nil when
	// none or unknown). They are owned by the tracker: read, do not keep.
	Producer *Producer
	Consumer *Consumer
	// Session is the connection's handshake state.
	Session *Session
	// Acks, on an ACK, are the MESSAGE frames it acknowledges (cumulative
	// acks: the unacknowledged ones up to its id).
	Acks []int
	// AckedBy, on a MESSAGE (second pass only), are the ACK frames
	// acknowledging it.
	AckedBy []int
	// RedeliveryOf, on a MESSAGE, is the earlier MESSAGE frame that
	// delivered the same id to the same consumer (0 when none).
	RedeliveryOf int
	// Entries is the number of messages a SEND or MESSAGE carries (batch
	// entries, or 1).
	Entries int
	// Error is the ServerError name of an error response.
	Error string
	// Problems are the conformance problems found on this frame.
	Problems []decode.Problem

	req, resp Link
}

// Topic returns the topic of the frame's producer or consumer, or of the
// request it answers when the request named one.
func (i *Info) Topic() string {
	switch {
	case i.Producer != nil:
		return i.Producer.Topic
	case i.Consumer != nil:
		return i.Consumer.Topic
	}
	return ""
}

// reset clears i for the next frame, keeping its slices. Field by field:
// a whole-struct assignment costs a bulk write barrier per frame.
func (i *Info) reset() {
	i.Request, i.Response, i.Redirect = nil, nil, nil
	i.Producer, i.Consumer, i.Session = nil, nil, nil
	i.Acks, i.AckedBy, i.Problems = i.Acks[:0], i.AckedBy[:0], i.Problems[:0]
	i.RedeliveryOf, i.Entries, i.Error = 0, 0, ""
	i.req, i.resp = Link{}, Link{}
}

// Finding is a conformance problem not reported on the frame being passed
// on: found at the end of a connection (unanswered requests), on a timeout,
// or on eviction. Frame, when not 0, is the frame it concerns.
type Finding struct {
	Time    time.Time
	Conn    *reassembly.Conn
	Dir     reassembly.Dir
	Frame   int
	Type    pulsarapi.BaseCommand_Type
	Problem decode.Problem
}

// Sink receives tracked frames, the decoder's stream events and findings,
// in order.
type Sink interface {
	Frame(f *decode.Frame, info *Info)
	Event(e *decode.Event)
	Finding(fd *Finding)
}

// Session is the handshake state of one connection.
type Session struct {
	Conn *reassembly.Conn
	// ClientVersion and ServerVersion are CONNECT's client_version and
	// CONNECTED's server_version.
	ClientVersion, ServerVersion string
	// ClientProtocol and ServerProtocol are the protocol versions each side
	// announced (-1 until seen).
	ClientProtocol, ServerProtocol int32
	// MaxMessageSize is CONNECTED's max_message_size (0 when not given).
	MaxMessageSize int
	// Connected is true once CONNECTED was seen.
	Connected bool
	// Partial is true when the capture does not hold the whole connection
	// (no handshake, or bytes lost or skipped): pairing problems are not
	// reported on it.
	Partial bool
	// TopicWatchers is CONNECT's feature flag supports_topic_watchers
	// (connectSeen: CONNECT was captured).
	TopicWatchers bool
	connectSeen   bool
}

// Negotiated returns the protocol version both sides speak, -1 if unknown.
func (s *Session) Negotiated() int32 {
	if s.ClientProtocol < 0 || s.ServerProtocol < 0 {
		return -1
	}
	return min(s.ClientProtocol, s.ServerProtocol)
}

// Producer is a producer as the tracker knows it.
type Producer struct {
	Conn  *reassembly.Conn
	ID    uint64
	Topic string
	// Name is the producer_name (from PRODUCER or PRODUCER_SUCCESS).
	Name string
	// Ready is true after a PRODUCER_SUCCESS with producer_ready not false.
	Ready bool
	// Closed is true after CLOSE_PRODUCER (from either side).
	Closed bool
	// Created is the PRODUCER frame's number.
	Created int

	lastLedger, lastEntry uint64
	hasLast               bool
	// lastSeq is the sequence_id of its last SEND (hasSeq).
	lastSeq uint64
	hasSeq  bool
	// chunks are its chunked messages still incomplete, by uuid: the next
	// chunk id expected, the chunk count, and the first chunk's SEND.
	chunks map[string]*chunkState
}

// chunkState is a chunked message being sent.
type chunkState struct {
	next, total int32
	first       int
}

// Consumer is a consumer as the tracker knows it.
type Consumer struct {
	Conn                *reassembly.Conn
	ID                  uint64
	Topic, Subscription string
	Name                string
	SubType             string
	Closed              bool
	Created             int
	// Permits is the flow-control balance: permits granted minus messages
	// (batch entries) dispatched.
	Permits int64

	del *deliveries
	// subscribed: its SUBSCRIBE was answered with SUCCESS.
	subscribed bool
}
