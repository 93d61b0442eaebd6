// Package diff compares two recordings of Pulsar traffic — captures or saved
// transcripts — after normalisation, the way a golden-file test compares
// outputs (docs/diff.md).
//
// A Transcript is the normalised, stable form of a capture: per connection,
// producer and consumer (keyed by topic, subscription and names, never by
// ports or numeric ids) the sequence of commands with their fields, plus the
// outcomes of requests (as paired by package track), the problems found and
// the latency per request type. Rules say which fields are ignored or
// renumbered (times, ports, request and entity ids, message ids,
// broker-generated names, publish_time; keep-alive frames; individual ACK
// frames). Compare matches the streams of two transcripts and diffs their
// command sequences, outcomes, problems and latencies; a Result renders as a
// unified diff or as JSON.
//
// Use it from a test:
//
//	base, err := diff.Load(ctx, "testdata/golden.json", diff.Options{})
//	cand, err := diff.Load(ctx, "run.pcap", diff.Options{})
//	res, err := diff.Compare(base, cand, diff.Options{})
//	if !res.Same() { res.WriteText(os.Stderr, diff.TextOptions{}) }
package diff
