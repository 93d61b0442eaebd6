package decode

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/reassembly"
)

// TestConflict: a retransmission conflict (reassembly.ConflictHandler) is
// an event with a retransmission-conflict problem; when its bytes belong
// to a frame still to come, that frame carries the problem too, and when
// they were in a frame already emitted, the event names it. Both for the
// StreamDecoder and for the ParallelStreamDecoder.
func TestConflict(t *testing.T) {
	send := buildFrame(frameSpec{cmd: sendCmd(t), metadata: mustMarshal(t, baseMeta()), payload: []byte("payload")})
	for _, parallel := range []bool{false, true} {
		rec := &recorder{}
		var h interface {
			reassembly.Handler
			reassembly.ConflictHandler
		}
		var wait func()
		if parallel {
			p := NewParallelStreamDecoder(rec, Options{Retain: true}, 2)
			h, wait = p, p.Wait
		} else {
			h, wait = NewStreamDecoder(rec, Options{Retain: true}), func() {}
		}
		c := testConn(true)
		ts := time.Unix(1531782768, 0)
		h.Open(c)
		h.Data(c, reassembly.ClientToServer, send, ts)                       // frame 1
		h.Data(c, reassembly.ClientToServer, send[:10], ts)                  // frame 2 begins
		h.Conflict(c, reassembly.ClientToServer, 3, 2, ts)                   // in frame 1: emitted
		h.Conflict(c, reassembly.ClientToServer, int64(len(send))+12, 4, ts) // in frame 2: to come
		h.Data(c, reassembly.ClientToServer, send[10:], ts)
		h.Data(c, reassembly.ClientToServer, send, ts) // frame 3: clean
		h.Close(c, reassembly.CloseFIN, ts)
		wait()
		if len(rec.frames) != 3 {
			t.Fatalf("parallel %v: %d frames", parallel, len(rec.frames))
		}
		for i, f := range rec.frames {
			has := HasProblem(f.Problems, CodeRetransmissionConflict)
			if has != (i == 1) {
				t.Errorf("parallel %v: frame %d: problems %v", parallel, f.N, codes(f.Problems))
			}
			if i == 1 && !strings.Contains(f.Problems[len(f.Problems)-1].Detail, "4 bytes at offset "+strconv.Itoa(len(send)+12)+" (12 bytes into the frame)") {
				t.Errorf("parallel %v: detail %q", parallel, f.Problems[len(f.Problems)-1].Detail)
			}
		}
		evs := rec.eventsOf(EventConflict)
		if len(evs) != 2 || !strings.HasSuffix(evs[0].Detail, "(frame 1)") || evs[0].Offset != 3 || evs[0].Bytes != 2 ||
			strings.Contains(evs[1].Detail, "(frame") || !slices.ContainsFunc(evs[1].Problems, func(p Problem) bool { return p.Code == CodeRetransmissionConflict }) {
			for _, e := range evs {
				t.Logf("event %+v", *e)
			}
			t.Errorf("parallel %v: %d conflict events", parallel, len(evs))
		}
	}
}
