package cli

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// brokerPair is one request and its response by their numbers among the
// frames of their direction of the connection from Client (1-based), as
// the lab's broker logs them (expect.json "pairs").
type brokerPair struct {
	Client string `json:"client"`
	// Instance tells connections on the same client address apart (port
	// reuse): 1-based in order of appearance; 0 in the expectations
	// means 1.
	Instance int `json:"instance"`
	Request  int `json:"request"`
	Response int `json:"response"`
}

// TestPairsAsBrokerLogged: on every lab capture whose broker logged which
// frame answers which, every response pulsarscope pairs is paired with the
// request the broker answered with it, no more and no fewer, in one pass
// and in two.
func TestPairsAsBrokerLogged(t *testing.T) {
	checked := 0
	for _, exp := range loadExpectations(t) {
		if len(exp.Pairs) == 0 {
			continue
		}
		want := map[brokerPair]bool{}
		for _, pr := range exp.Pairs {
			pr.Instance = max(pr.Instance, 1)
			want[pr] = true
		}
		for _, pass := range [][]string{nil, {"-2"}} {
			args := exp.args("json")
			args = append(append(args[:len(args)-1:len(args)-1], pass...), args[len(args)-1])
			out, errOut, code := run(t, args...)
			if code != ExitOK {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			got := pairsOf(t, exp.File, out)
			var missing, extra []string
			for pr := range want {
				if !got[pr] {
					missing = append(missing, pairString(pr))
				}
			}
			for pr := range got {
				if !want[pr] {
					extra = append(extra, pairString(pr))
				}
			}
			sort.Strings(missing)
			sort.Strings(extra)
			if len(missing)+len(extra) > 0 {
				t.Errorf("%s %v: %d of %d logged pairs found; missing %v; not logged %v", exp.File, pass, len(want)-len(missing), len(want), missing, extra)
			}
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("only %d captures with the broker's pairs", checked)
	}
}

// pairsOf returns the request→response pairs of a 'read -o json' output
// (the "request" link of broker→client frames) as brokerPairs: frames
// numbered per connection (by client address) and direction.
func pairsOf(t *testing.T, file, out string) map[brokerPair]bool {
	type where struct {
		client string
		conn   int
		index  int
	}
	byN := map[int]where{}
	count := map[string]int{} // conn+dir → frames so far
	instance := map[int]int{} // conn → its instance on its client address
	conns := map[string]int{} // client → connections seen
	got := map[brokerPair]bool{}
	for _, line := range ndjsonLines(out) {
		var r struct {
			N       int    `json:"n"`
			Conn    int    `json:"conn"`
			Event   string `json:"event"`
			Src     string `json:"src"`
			Dst     string `json:"dst"`
			Dir     string `json:"dir"`
			Request *struct {
				N int `json:"n"`
			} `json:"request"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: %v in %q", file, err, line)
		}
		if r.Event != "" || r.N == 0 {
			continue
		}
		client := r.Src
		if r.Dir == "s2c" {
			client = r.Dst
		}
		if instance[r.Conn] == 0 {
			conns[client]++
			instance[r.Conn] = conns[client]
		}
		key := itoa(r.Conn) + r.Dir
		count[key]++
		byN[r.N] = where{client, r.Conn, count[key]}
		if r.Dir == "s2c" && r.Request != nil {
			req, ok := byN[r.Request.N]
			if !ok || req.conn != r.Conn {
				t.Fatalf("%s: frame %d answers frame %d, not a frame of its connection seen before", file, r.N, r.Request.N)
			}
			got[brokerPair{Client: client, Instance: instance[r.Conn], Request: req.index, Response: count[key]}] = true
		}
	}
	return got
}

func pairString(p brokerPair) string {
	return p.Client + "#" + itoa(p.Instance) + ":" + itoa(p.Request) + "→" + itoa(p.Response)
}

// ndjsonLines splits an NDJSON output into its lines.
func ndjsonLines(out string) [][]byte {
	return bytes.Split([]byte(strings.TrimSuffix(out, "\n")), []byte("\n"))
}
