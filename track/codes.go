package track

// Conformance problem codes (stable; documented in docs/problems.md).
const (
	// CodeUnanswered: a request got no response before its connection
	// ended (or before Options.RequestTimeout).
	CodeUnanswered = "request-unanswered"
	// CodeUnmatchedResponse: a response (or PONG) whose request was not seen.
	CodeUnmatchedResponse = "response-without-request"
	// CodeRequestIDReused: a request reuses a request_id still in flight.
	CodeRequestIDReused = "request-id-reused"
	// CodeUnknownProducer: SEND for a producer id never created (or closed).
	CodeUnknownProducer = "send-unknown-producer"
	// CodeProducerNotReady: SEND before the producer's PRODUCER_SUCCESS.
	CodeProducerNotReady = "send-before-producer-ready"
	// CodePermitsExceeded: MESSAGE dispatched with no flow permits left.
	CodePermitsExceeded = "permits-exceeded"
	// CodeAckNotDelivered: ACK of a message never delivered to that consumer.
	CodeAckNotDelivered = "ack-not-delivered"
	// CodeCommandTooNew: a command newer than the negotiated protocol version.
	CodeCommandTooNew = "command-too-new"
	// CodeBeforeConnected: a command before the handshake completed.
	CodeBeforeConnected = "before-connected"
	// CodePingUnanswered: a PING without PONG within the keep-alive timeout.
	CodePingUnanswered = "ping-unanswered"
	// CodeFrameOverMaxSize: a frame larger than CONNECTED's max_message_size
	// plus the broker's frame padding.
	CodeFrameOverMaxSize = "frame-over-max-message-size"
	// CodeErrorResponse: an error response (ERROR, SEND_ERROR, a response
	// whose error field is set or whose lookup result is Failed).
	CodeErrorResponse = "error-response"
	// CodeRedirectLoop: a LOOKUP redirect chain revisits a broker or is too long.
	CodeRedirectLoop = "lookup-redirect-loop"
	// CodeMessageIDBackwards: a producer's receipts' message ids go backwards.
	CodeMessageIDBackwards = "message-id-backwards"
	// CodeStateEvicted: tracking state was dropped (cap or timeout); later
	// pairing for it is not checked.
	CodeStateEvicted = "state-evicted"
)
