// Package track keeps per-connection protocol state and annotates the
// frames coming out of the decoder: it pairs requests with their responses
// (by request_id, by producer and sequence id, PING with PONG), links acks to
// the messages they acknowledge, accounts for flow-control permits, names
// the producer or consumer a frame refers to, and reports conformance
// problems (docs/problems.md, "Conformance").
//
// A Tracker sits between decode and render: it implements decode.Sink and
// hands every frame on to a track.Sink together with an *Info. It never
// re-parses bytes and keeps no reference to decoder-owned values, so it
// works with or without decode.Options.Retain.
//
// Two passes: a Tracker created with Options.Record collects, per frame
// number, what only later frames reveal (a request's response, the acks of
// a message, problems found at the end of the capture); pass that Results to
// the Options of a second Tracker over the same input to have them on the
// earlier frames.
package track
