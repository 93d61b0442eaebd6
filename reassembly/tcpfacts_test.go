package reassembly

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// factsRecorder records every call, with the capture time (ms after t0)
// and, for gaps, the reason; conflicts too.
type factsRecorder struct{ *recorder }

func (r factsRecorder) Data(c *Conn, d Dir, data []byte, ts time.Time) {
	r.recorder.Data(c, d, data, ts)
	r.events[len(r.events)-1] += fmt.Sprintf(" @%d", ts.Sub(t0).Milliseconds())
}

func (r factsRecorder) GapWithReason(c *Conn, d Dir, n int64, reason GapReason, ts time.Time) {
	r.recorder.Gap(c, d, n, ts)
	r.events[len(r.events)-1] += fmt.Sprintf(" (%s) @%d", reason, ts.Sub(t0).Milliseconds())
}

func (r factsRecorder) Conflict(c *Conn, d Dir, off, n int64, ts time.Time) {
	r.check(c, "conflict")
	r.events = append(r.events, fmt.Sprintf("conflict %d %s off=%d n=%d @%d", c.ID, d, off, n, ts.Sub(t0).Milliseconds()))
}

func (r factsRecorder) Close(c *Conn, reason CloseReason, ts time.Time) {
	r.recorder.Close(c, reason, ts)
	r.events[len(r.events)-1] += fmt.Sprintf(" @%d", ts.Sub(t0).Milliseconds())
}

// TestTCPFacts checks, call by call and in order, what the reassembler
// makes of the TCP facts of imperfect captures: holes the peer
// acknowledged past, port reuse with and without FIN or RST, SYN
// retransmissions, segments after a close, and retransmissions that carry
// other bytes than the first copy.
func TestTCPFacts(t *testing.T) {
	const c1, s1 = 1001, 5001 // first data sequence numbers after handshake(1000, 5000)
	hs := func(cisn, sisn uint32, at time.Duration) []pkt {
		return []pkt{
			{from: cli, to: srv, seq: cisn, flags: "S", at: at},
			{from: srv, to: cli, seq: sisn, ack: cisn + 1, flags: "SA", at: at},
		}
	}
	join := func(ps ...[]pkt) []pkt {
		var out []pkt
		for _, p := range ps {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name   string
		opts   Options
		pkts   []pkt
		events []string // every call after the opens
		check  func(t *testing.T, s Stats)
	}{
		{
			name: "hole acknowledged past: declared at the ACK, what waited behind it at its own time, before the ACK's data",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, flags: "A", ack: s1, data: "aaaa", at: ms(1)},
				// c1+4 "bbbb" was sent, received and acknowledged: the capture missed it.
				{from: cli, to: srv, seq: c1 + 8, flags: "A", ack: s1, data: "cccc", at: ms(3)},
				{from: srv, to: cli, seq: s1, flags: "A", ack: c1 + 12, data: "resp", at: ms(4)},
			}),
			events: []string{
				`data 1 c2s "aaaa" @1`,
				"gap 1 c2s 4 (not captured, though the receiver acknowledged them) @4",
				`data 1 c2s "cccc" @3`,
				`data 1 s2c "resp" @4`,
				"close 1 end-of-capture @4",
			},
			check: func(t *testing.T, s Stats) { expectEqual(t, "acked gaps", s.AckedGaps, 1) },
		},
		{
			name: "lost tail acknowledged: declared when data comes after it, which is then in order",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, flags: "A", ack: s1, data: "aaaa", at: ms(1)},
				{from: srv, to: cli, seq: s1, flags: "A", ack: c1 + 8, data: "resp", at: ms(2)},
				{from: cli, to: srv, seq: c1 + 8, flags: "A", ack: s1 + 4, data: "cccc", at: ms(3)},
			}),
			events: []string{
				`data 1 c2s "aaaa" @1`,
				`data 1 s2c "resp" @2`,
				"gap 1 c2s 4 (not captured, though the receiver acknowledged them) @3",
				`data 1 c2s "cccc" @3`,
				"close 1 end-of-capture @3",
			},
		},
		{
			name: "lost tails acknowledged, reported at the end: data, and a FIN the capture missed",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, flags: "A", ack: s1, data: "aaaa", at: ms(1)},
				// c1+4 "bbbb" and the client's FIN lost; the server acknowledges both.
				{from: srv, to: cli, seq: s1, flags: "A", ack: c1 + 9, data: "resp", at: ms(2)},
				// The server's last 2 bytes lost, and its FIN captured: acknowledged.
				{from: srv, to: cli, seq: s1 + 6, flags: "FA", ack: c1 + 9, at: ms(3)},
				{from: cli, to: srv, seq: c1 + 9, flags: "A", ack: s1 + 7, at: ms(4)},
			}),
			events: []string{
				`data 1 c2s "aaaa" @1`,
				`data 1 s2c "resp" @2`,
				"gap 1 s2c 2 (not captured, though the receiver acknowledged them) @4",
				"gap 1 c2s 4 (not captured, though the receiver acknowledged them) @4",
				"close 1 end-of-capture @4",
			},
		},
		{
			name: "duplicate ACK at the hole: the retransmission fills it",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, flags: "A", ack: s1, data: "aaaa", at: ms(1)},
				{from: cli, to: srv, seq: c1 + 8, flags: "A", ack: s1, data: "cccc", at: ms(2)},
				{from: srv, to: cli, seq: s1, flags: "A", ack: c1 + 4, at: ms(3)},
				{from: cli, to: srv, seq: c1 + 4, flags: "A", ack: s1, data: "bbbb", at: ms(9)},
			}),
			events: []string{
				`data 1 c2s "aaaa" @1`,
				`data 1 c2s "bbbb" @9`,
				`data 1 c2s "cccc" @9`,
				"close 1 end-of-capture @9",
			},
		},
		{
			name: "port reused without FIN or RST: the old connection ends reused, the new one is opened",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, flags: "A", ack: s1, data: "one", at: ms(1)},
				{from: srv, to: cli, seq: s1, flags: "A", ack: c1 + 3, data: "ONE", at: ms(2)},
			}, hs(700000, 900000, ms(10)), []pkt{
				{from: cli, to: srv, seq: 700001, flags: "A", ack: 900001, data: "two", at: ms(11)},
				{from: srv, to: cli, seq: 900001, flags: "A", ack: 700004, data: "TWO", at: ms(12)},
			}),
			events: []string{
				`data 1 c2s "one" @1`,
				`data 1 s2c "ONE" @2`,
				"close 1 reused @10",
				"open 2 127.0.0.1:40000>127.0.0.2:6650 hs=true tls=false",
				`data 2 c2s "two" @11`,
				`data 2 s2c "TWO" @12`,
				"close 2 end-of-capture @12",
			},
			check: func(t *testing.T, s Stats) { expectEqual(t, "reused", s.Reused, 1) },
		},
		{
			name: "port reused after FIN",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, flags: "A", ack: s1, data: "one", at: ms(1)},
				{from: cli, to: srv, seq: c1 + 3, flags: "FA", ack: s1, at: ms(2)},
				{from: srv, to: cli, seq: s1, flags: "FA", ack: c1 + 4, at: ms(3)},
				{from: cli, to: srv, seq: c1 + 4, flags: "A", ack: s1 + 1, at: ms(4)},
			}, hs(2000, 6000, ms(10)), []pkt{
				{from: cli, to: srv, seq: 2001, flags: "A", ack: 6001, data: "two", at: ms(11)},
			}),
			events: []string{
				`data 1 c2s "one" @1`,
				"close 1 fin @3",
				"open 2 127.0.0.1:40000>127.0.0.2:6650 hs=true tls=false",
				`data 2 c2s "two" @11`,
				"close 2 end-of-capture @11",
			},
		},
		{
			name: "port reused after RST, a second and an hour later; a late segment of the old one is not data",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, flags: "A", ack: s1, data: "one", at: ms(1)},
				{from: srv, to: cli, seq: s1, flags: "RA", ack: c1 + 3, at: ms(2)},
				{from: cli, to: srv, seq: c1 + 3, flags: "A", ack: s1, data: "late", at: ms(3)},
			}, hs(2000, 6000, time.Second), []pkt{
				{from: cli, to: srv, seq: 2001, flags: "A", ack: 6001, data: "two", at: time.Second + ms(1)},
				{from: srv, to: cli, seq: 6001, flags: "RA", ack: 2004, at: time.Second + ms(2)},
			}, hs(3000, 7000, time.Hour), []pkt{
				{from: cli, to: srv, seq: 3001, flags: "A", ack: 7001, data: "three", at: time.Hour + ms(1)},
			}),
			events: []string{
				`data 1 c2s "one" @1`,
				"close 1 rst @2",
				"open 2 127.0.0.1:40000>127.0.0.2:6650 hs=true tls=false",
				`data 2 c2s "two" @1001`,
				"close 2 rst @1002",
				"open 3 127.0.0.1:40000>127.0.0.2:6650 hs=true tls=false",
				`data 3 c2s "three" @3600001`,
				"close 3 end-of-capture @3600001",
			},
			check: func(t *testing.T, s Stats) {
				expectEqual(t, "after close", s.AfterClose, 1)
				expectEqual(t, "reused", s.Reused, 0) // closed first: not reuse of an open connection
			},
		},
		{
			name: "SYN retransmitted, then a SYN with data",
			pkts: []pkt{
				{from: cli, to: srv, seq: 1000, flags: "S"},
				{from: cli, to: srv, seq: 1000, flags: "S", at: ms(1000)},
				{from: srv, to: cli, seq: 5000, ack: 1001, flags: "SA", at: ms(1001)},
				{from: cli, to: srv, seq: c1, flags: "A", ack: s1, data: "abc", at: ms(1002)},
				{from: ep{"127.0.0.1", 40009}, to: srv, seq: 77, flags: "S", data: "syn-data", at: ms(1003)},
			},
			events: []string{
				`data 1 c2s "abc" @1002`,
				"open 2 127.0.0.1:40009>127.0.0.2:6650 hs=true tls=false",
				`data 2 c2s "syn-data" @1003`,
				"close 1 end-of-capture @1003",
				"close 2 end-of-capture @1003",
			},
			check: func(t *testing.T, s Stats) { expectEqual(t, "conns", s.Conns, 2) },
		},
		{
			name: "retransmission with other bytes than the queued first copy: the first is used",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, data: "aaaa", at: ms(1)},
				{from: cli, to: srv, seq: c1 + 8, data: "cccc", at: ms(2)},
				{from: cli, to: srv, seq: c1 + 8, data: "cXcc", at: ms(3)},
				{from: cli, to: srv, seq: c1 + 4, data: "bbbbXXXX", at: ms(4)}, // overlaps the queued copy
			}),
			events: []string{
				`data 1 c2s "aaaa" @1`,
				"conflict 1 c2s off=8 n=4 @3",
				"conflict 1 c2s off=8 n=4 @4",
				`data 1 c2s "bbbb" @4`,
				`data 1 c2s "cccc" @4`,
				"close 1 end-of-capture @4",
			},
			check: func(t *testing.T, s Stats) { expectEqual(t, "conflicts", s.Conflicts, 2) },
		},
		{
			name: "retransmission with other bytes than the delivered copy; a keepalive byte is not one",
			pkts: join(hs(1000, 5000, 0), []pkt{
				{from: cli, to: srv, seq: c1, data: "aaaa", at: ms(1)},
				{from: cli, to: srv, seq: c1 + 4, data: "bbbb", at: ms(2)},
				{from: cli, to: srv, seq: c1, data: "aaaabXbb", at: ms(3)}, // covers both
				{from: cli, to: srv, seq: c1 + 7, data: "?", at: ms(4)},    // keepalive probe
				{from: cli, to: srv, seq: c1 + 6, data: "bbcc", at: ms(5)}, // overlap: delivered part same
			}),
			events: []string{
				`data 1 c2s "aaaa" @1`,
				`data 1 c2s "bbbb" @2`,
				"conflict 1 c2s off=4 n=4 @3",
				`data 1 c2s "cc" @5`,
				"close 1 end-of-capture @5",
			},
			check: func(t *testing.T, s Stats) { expectEqual(t, "retransmissions", s.Retransmissions, 2) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := factsRecorder{newRecorder()}
			a := New(r, tc.opts)
			feed(a, tc.pkts)
			a.FlushAll()
			var got []string
			for _, e := range r.events {
				if !strings.HasPrefix(e, "open 1 ") {
					got = append(got, e)
				}
			}
			expectEqual(t, "events", "\n"+strings.Join(got, "\n"), "\n"+strings.Join(tc.events, "\n"))
			if tc.check != nil {
				tc.check(t, a.Stats())
			}
		})
	}
}
