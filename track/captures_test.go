package track

import (
	"fmt"
	"testing"

	"github.com/pulsarscope/pulsarscope/reassembly"
)

// answeredByBroker counts the pairs the broker answered, by request type:
// responses in s2c with a request link (the expect.json "answered").
func answeredByBroker(col *collector) map[string]int {
	m := map[string]int{}
	for _, f := range col.frames {
		if f.request != nil && f.dir == reassembly.ServerToClient {
			m[f.request.Type.String()]++
		}
	}
	return m
}

// TestCaptures checks every lab capture: the pairs found equal the
// broker's own "answered" counts (base captures), and the conformance
// problems are exactly the expected ones: none on real-client captures and
// their fault variants (the tracker does not blame the client for capture
// loss), and on errors.pcap the scripted failures the README describes.
func TestCaptures(t *testing.T) {
	wantProblems := map[string]map[string]int{
		// TopicNotFound, AuthorizationError, SEND_ERROR PersistenceError;
		// the broker's note "SEND for unknown producer 3" (frame 52, sent
		// after the broker closed producer 3) which it never answered: the
		// 11th SEND of "answered SEND 10".
		"errors.pcap": {CodeErrorResponse: 3, CodeUnknownProducer: 1, CodeUnanswered: 1},
	}
	for _, e := range loadExpectations(t) {
		t.Run(e.File, func(t *testing.T) {
			col, _ := runPcap(t, e.File, Options{}, 16650)
			if e.Base == "" {
				got := answeredByBroker(col)
				if fmt.Sprint(got) != fmt.Sprint(e.Answered) {
					t.Errorf("answered by type\n got %v\nwant %v", got, e.Answered)
				}
			}
			want := wantProblems[e.File]
			if want == nil {
				want = map[string]int{}
			}
			if got := col.codes(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("conformance problems\n got %v\nwant %v", got, want)
				for _, f := range col.frames {
					for _, p := range f.problems {
						t.Logf("frame %d %s: %s: %s", f.n, f.typ, p.Code, p.Detail)
					}
				}
				for _, f := range col.findings {
					t.Logf("finding on %d: %s: %s", f.Frame, f.Problem.Code, f.Problem.Detail)
				}
			}
		})
	}
}

// TestTwoPass checks that a second pass puts on each request the response
// the first pass paired, and on each MESSAGE the ACKs linked to it.
func TestTwoPass(t *testing.T) {
	for _, name := range []string{"subscriptions.pcap", "errors.pcap", "partitioned.pcap"} {
		t.Run(name, func(t *testing.T) {
			first, tr := runPcap(t, name, Options{Record: true})
			second, _ := runPcap(t, name, Options{Results: tr.Results()})
			if len(first.frames) != len(second.frames) {
				t.Fatalf("frames: %d then %d", len(first.frames), len(second.frames))
			}
			byN := map[int]seen{}
			for _, f := range second.frames {
				byN[f.n] = f
			}
			pairs, acks := 0, 0
			for _, f := range first.frames {
				if f.request != nil {
					pairs++
					req := byN[f.request.N]
					if req.response == nil || req.response.N != f.n {
						t.Errorf("request #%d: response %+v, want #%d", f.request.N, req.response, f.n)
					}
				}
				for _, m := range f.acks {
					acks++
					if !containsInt(byN[m].ackedBy, f.n) {
						t.Errorf("MESSAGE #%d: acked_by %v lacks ACK #%d", m, byN[m].ackedBy, f.n)
					}
				}
			}
			if pairs == 0 || (name == "subscriptions.pcap" && acks == 0) {
				t.Errorf("%d pairs, %d ack links", pairs, acks)
			}
			// End-of-capture findings are on their frame in the second pass.
			if len(second.findings) != 0 {
				t.Errorf("second pass still reports %d findings", len(second.findings))
			}
			if fmt.Sprint(first.codes()) != fmt.Sprint(second.codes()) {
				t.Errorf("problems differ: %v then %v", first.codes(), second.codes())
			}
		})
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
