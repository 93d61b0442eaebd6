// Package replay records the calls the reassembler makes for a capture, so
// that benchmarks can replay them through a decoder without the cost of
// reading the capture and reassembling it.
package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// Recording is a capture's reassembled stream calls, in order. It is a
// reassembly.Handler; the bytes of each Data call are copied.
type Recording struct {
	calls []func(h reassembly.Handler)
	// Bytes counts the bytes of the Data calls.
	Bytes int64
}

// Record reassembles the capture at path (Pulsar's port 6650) and returns
// its calls.
func Record(path string) (*Recording, error) {
	src, err := capture.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	r := &Recording{}
	if err := reassembly.New(r, reassembly.Options{Ports: []uint16{6650}}).Run(context.Background(), src); err != nil {
		return nil, fmt.Errorf("reassembling %s: %w", path, err)
	}
	return r, nil
}

// Replay makes the recorded calls on h.
func (r *Recording) Replay(h reassembly.Handler) {
	for _, c := range r.calls {
		c(h)
	}
}

// Open records an Open call.
func (r *Recording) Open(c *reassembly.Conn) {
	r.calls = append(r.calls, func(h reassembly.Handler) { h.Open(c) })
}

// Data records a Data call, with a copy of data.
func (r *Recording) Data(c *reassembly.Conn, d reassembly.Dir, data []byte, ts time.Time) {
	b := append([]byte(nil), data...)
	r.Bytes += int64(len(b))
	r.calls = append(r.calls, func(h reassembly.Handler) { h.Data(c, d, b, ts) })
}

// Gap records a Gap call.
func (r *Recording) Gap(c *reassembly.Conn, d reassembly.Dir, n int64, ts time.Time) {
	r.calls = append(r.calls, func(h reassembly.Handler) { h.Gap(c, d, n, ts) })
}

// Close records a Close call.
func (r *Recording) Close(c *reassembly.Conn, why reassembly.CloseReason, ts time.Time) {
	r.calls = append(r.calls, func(h reassembly.Handler) { h.Close(c, why, ts) })
}
