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
	// CodeFeatureTooNew: a field or feature used below the negotiated
	// protocol version that introduced it, or without the feature flag
	// CONNECT must announce for it.
	CodeFeatureTooNew = "feature-too-new"
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
	// CodeLookupAuthoritative: the LOOKUP following a redirect does not
	// carry the redirect's authoritative flag.
	CodeLookupAuthoritative = "lookup-authoritative-mismatch"
	// CodeMessageIDBackwards: a producer's receipts' message ids go backwards.
	CodeMessageIDBackwards = "message-id-backwards"
	// CodeUnknownConsumer: MESSAGE, FLOW, ACK or REDELIVER for a
	// consumer_id never subscribed on the connection.
	CodeUnknownConsumer = "unknown-consumer"
	// CodeFlowZero: FLOW granting 0 permits.
	CodeFlowZero = "flow-zero-permits"
	// CodeSequenceBackwards: a producer's SEND sequence_id lower than its
	// previous SEND's on the connection.
	CodeSequenceBackwards = "sequence-id-backwards"
	// CodeProducerIDReused: PRODUCER with the id of a producer still open
	// (created and not closed) on the connection.
	CodeProducerIDReused = "producer-id-reused"
	// CodeConsumerIDReused: SUBSCRIBE with the id of a consumer still
	// open (subscribed and not closed) on the connection.
	CodeConsumerIDReused = "consumer-id-reused"
	// CodeCumulativeAckShared: a cumulative ACK from a Shared or
	// Key_Shared consumer, which the broker refuses.
	CodeCumulativeAckShared = "cumulative-ack-shared"
	// CodeChunkOrder: a producer's chunks of a message not in order from 0.
	CodeChunkOrder = "chunk-out-of-order"
	// CodeChunkIncomplete: a chunked message whose last chunk was never
	// sent before the connection ended.
	CodeChunkIncomplete = "chunk-incomplete"
	// CodeChunkedBatch: a chunk that is also a batch (chunking and batching
	// exclude each other).
	CodeChunkedBatch = "chunk-in-batch"
	// CodeStateEvicted: tracking state was dropped (cap or timeout); later
	// pairing for it is not checked.
	CodeStateEvicted = "state-evicted"
)
