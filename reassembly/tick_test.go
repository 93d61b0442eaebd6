package reassembly

import (
	"testing"
	"time"
)

// TestTick checks that Tick, called while no packets arrive, flushes as a
// packet arriving at its time would: idle connections are closed, data
// waiting for missing bytes is delivered after a gap, and nothing happens
// before it is due or when the clock would go backwards.
func TestTick(t *testing.T) {
	const c1 = 1001 // first data sequence number after handshake(1000, 5000)
	tests := []struct {
		name  string
		opts  Options
		pkts  []pkt
		ticks []time.Duration // offsets from t0, in order
		// want: the stream of conn 1 client → server, its close reason
		// (0: still open) and the close time (offset from t0).
		c2s     string
		close   CloseReason
		closeAt time.Duration
		idle    int64
		gaps    int64
	}{
		{
			name:  "idle connection closed without packets",
			opts:  Options{IdleTimeout: time.Minute},
			pkts:  append(handshake(cli, srv, 1000, 5000), pkt{from: cli, to: srv, seq: c1, data: "hello"}),
			ticks: []time.Duration{61 * time.Second},
			c2s:   "hello", close: CloseIdle, closeAt: 61 * time.Second, idle: 1,
		},
		{
			name:  "not yet idle",
			opts:  Options{IdleTimeout: time.Minute},
			pkts:  append(handshake(cli, srv, 1000, 5000), pkt{from: cli, to: srv, seq: c1, data: "hello"}),
			ticks: []time.Duration{10 * time.Second, 30 * time.Second, 59 * time.Second},
			c2s:   "hello",
		},
		{
			name: "ticks every 100 ms close at the first due flush",
			opts: Options{IdleTimeout: time.Second, GapTimeout: -1}, // flush every 250 ms
			pkts: append(handshake(cli, srv, 1000, 5000), pkt{from: cli, to: srv, seq: c1, data: "x", at: ms(0)}),
			ticks: func() []time.Duration {
				var d []time.Duration
				for i := 1; i <= 20; i++ {
					d = append(d, ms(100*i))
				}
				return d
			}(),
			// Flushes at 300, 600, 900 ms (too early), then 1200 ms.
			c2s: "x", close: CloseIdle, closeAt: ms(1200), idle: 1,
		},
		{
			name: "gap timeout delivers buffered data, connection stays open",
			opts: Options{GapTimeout: time.Second, IdleTimeout: time.Hour},
			pkts: append(handshake(cli, srv, 1000, 5000),
				pkt{from: cli, to: srv, seq: c1, data: "ab"},
				pkt{from: cli, to: srv, seq: c1 + 4, data: "ef"}, // 2 bytes lost
			),
			ticks: []time.Duration{ms(500), ms(1500)},
			c2s:   "ab<gap 2>ef", gaps: 1,
		},
		{
			name:  "clock never goes backwards",
			opts:  Options{IdleTimeout: time.Minute},
			pkts:  append(handshake(cli, srv, 1000, 5000), pkt{from: cli, to: srv, seq: c1, data: "hello", at: 100 * time.Second}),
			ticks: []time.Duration{0, 150 * time.Second},
			c2s:   "hello",
		},
		{
			name:  "tick before any packet",
			opts:  Options{IdleTimeout: time.Second},
			ticks: []time.Duration{0, time.Minute},
			pkts:  []pkt{{from: cli, to: srv, seq: 1, data: "late", at: time.Minute + ms(10)}},
			c2s:   "late",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			a := New(r, tc.opts)
			// Each packet before the first tick not earlier than it.
			i := 0
			for _, tk := range tc.ticks {
				for i < len(tc.pkts) && tc.pkts[i].at <= tk {
					feed(a, tc.pkts[i:i+1])
					i++
				}
				a.Tick(t0.Add(tk))
			}
			feed(a, tc.pkts[i:])
			expectEqual(t, "c2s", r.stream(1, ClientToServer), tc.c2s)
			expectEqual(t, "close", r.closed[1], tc.close)
			if tc.close != 0 {
				expectEqual(t, "close time", r.closeTS[1].Sub(t0), tc.closeAt)
			}
			s := a.Stats()
			expectEqual(t, "idle closes", s.IdleCloses, tc.idle)
			expectEqual(t, "gaps", s.Gaps, tc.gaps)
		})
	}
}
