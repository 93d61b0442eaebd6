package reassembly

import (
	"strings"
	"testing"
	"time"
)

// reasonRecorder is a recorder that also wants gap reasons.
type reasonRecorder struct {
	*recorder
	reasons []GapReason
}

func (r *reasonRecorder) GapWithReason(c *Conn, d Dir, n int64, reason GapReason, ts time.Time) {
	r.reasons = append(r.reasons, reason)
	r.Gap(c, d, n, ts)
}

// TestGapReasonsAndPayload: a gap forced by the buffer limit, one given up
// at the gap timeout and one left at the end of capture carry their
// reason; Conn.Payload counts every byte of sequence space, delivered or
// lost, per direction.
func TestGapReasonsAndPayload(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		gap  time.Duration // capture time of the data after the hole
		want GapReason
	}{
		{"buffer limit", Options{MaxBufferedBytesPerConn: 1, GapTimeout: -1, IdleTimeout: -1}, 0, GapBufferLimit},
		{"gap timeout", Options{GapTimeout: time.Second, IdleTimeout: time.Hour}, 5 * time.Second, GapTimeout},
		{"end of capture", Options{GapTimeout: -1, IdleTimeout: -1}, 0, GapNotCaptured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &reasonRecorder{recorder: newRecorder()}
			a := New(r, tc.opts)
			pkts := handshake(cli, srv, 100, 500)
			pkts = append(pkts,
				pkt{from: cli, to: srv, seq: 101, flags: "A", data: "aaaa"},
				// 4000 bytes missing, then data
				pkt{from: cli, to: srv, seq: 4105, flags: "A", data: strings.Repeat("b", 3000)},
				pkt{from: cli, to: srv, seq: 7105, flags: "A", data: strings.Repeat("c", 3000), at: tc.gap},
				pkt{from: srv, to: cli, seq: 501, flags: "A", data: "xyz", at: tc.gap + time.Millisecond},
			)
			feed(a, pkts)
			a.FlushAll()
			if len(r.reasons) == 0 || r.reasons[0] != tc.want {
				t.Errorf("gap reasons %v, want %v first", r.reasons, tc.want)
			}
			c := r.conns[0]
			if c.Payload != [2]int64{4 + 4000 + 6000, 3} {
				t.Errorf("Payload %v", c.Payload)
			}
			st := a.Stats()
			if st.BytesDelivered+st.LostBytes != c.Payload[0]+c.Payload[1] {
				t.Errorf("stats %+v vs payload %v", st, c.Payload)
			}
		})
	}
}
