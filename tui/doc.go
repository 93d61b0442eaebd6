// Package tui is pulsarscope's terminal user interface: a virtualised
// timeline of every Pulsar frame, a detail pane with the decoded tree and a
// hex pane with the frame's regions, a display filter, search, marks, and
// connection, statistics and problem views. It works on capture files and on
// live feeds alike: a Source delivers frames incrementally and rows append
// as they arrive (docs/tui.md).
//
// Memory stays small per frame: the Index keeps about 64 bytes per frame
// (time, connection, direction, type, size, pair, latency, entity, flags and
// the frame's position in a spill file); the frame's bytes go to an
// append-only spill file and are decoded again, on demand, only for the rows
// on screen and the selected frame.
package tui
