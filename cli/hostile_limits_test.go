package cli

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Each limit, when hit, is a reported problem or event, not a silent drop.

// TestLimitReassemblyBuffer: a lost segment followed by 300 KiB of
// out-of-order data with --reassembly-buffer 64KiB: the reassembler gives
// up on the hole, and the gap's bytes-lost problem names the limit.
func TestLimitReassemblyBuffer(t *testing.T) {
	v, fr := baseConv(t, 1000)
	md := &pulsarapi.MessageMetadata{ProducerName: ptr("big"), SequenceId: ptr(uint64(1)), PublishTime: ptr(uint64(1764400000000))}
	first := len(v.recs)
	v.send(0, payloadFrame(t, md, bytes.Repeat([]byte("y"), 300<<10)))
	v.rest(fr)
	v.fin()
	v.recs = append(v.recs[:first+1], v.recs[first+2:]...) // drop the big frame's 2nd segment
	name := writeTemp(t, "hole.pcap", writePcap(t, v.recs, 262144))
	for _, args := range [][]string{{"read", "-o", "json"}, {"stats"}} {
		code, out, _, mem := runMain(t, append(args, "--reassembly-buffer", "64KiB", name), "reassembly buffer limit reached", "bytes-lost", "✗")
		if args[0] == "read" {
			checkRun(t, code, ExitOK, out, mem, "reassembly buffer limit reached")
		} else {
			checkRun(t, code, ExitOK, out, mem, "bytes-lost")
			if out.found["✗"] > 0 {
				t.Error("stats: byte accounting does not balance")
			}
		}
	}
	// Without the limit (default 4 MiB) the hole is only given up at the end.
	code, out, _, _ := runMain(t, []string{"read", "-o", "json", name}, "reassembly buffer limit reached", `"bytes-lost"`)
	if code != ExitOK || out.found["reassembly buffer limit reached"] > 0 || out.found[`"bytes-lost"`] == 0 {
		t.Errorf("default buffer: exit %d, %v", code, out.found)
	}
}

// TestLimitMaxConns: two interleaved connections with --max-conns 1: the
// older is closed with a close event "evicted".
func TestLimitMaxConns(t *testing.T) {
	fr := realFrames(t, "basic.pcap")
	a, b := newConv(40000, 1000), newConv(40001, 5000)
	b.ts = b.ts.Add(500 * time.Microsecond)
	for _, v := range []*hconv{a, b} {
		v.handshake()
		v.send(0, fr[0][0])
		v.send(1, fr[1][0])
	}
	recs := append(append([]hrec(nil), a.recs...), b.recs...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].ts.Before(recs[j].ts) })
	name := writeTemp(t, "two.pcap", writePcap(t, recs, 262144))
	code, out, _, mem := runMain(t, []string{"read", "-o", "json", "--max-conns", "1", name}, `"detail":"evicted"`)
	checkRun(t, code, ExitOK, out, mem, `"detail":"evicted"`)
	code, out, _, _ = runMain(t, []string{"read", "-o", "text", "--events", "--max-conns", "1", name}, `evicted`)
	if code != ExitOK || out.found["evicted"] == 0 {
		t.Errorf("text --events: exit %d, no eviction shown", code)
	}
	code, out, _, _ = runMain(t, []string{"read", "-q", "--max-conns", "1", name}, `connections evicted (--max-conns)`)
	if code != ExitOK || out.found["connections evicted (--max-conns)"] == 0 {
		t.Errorf("-q: exit %d, no eviction in the summary", code)
	}
}

// TestLimitMaxPending: ten unanswered LOOKUPs with --max-pending 4: the
// oldest are dropped with a state-evicted problem.
func TestLimitMaxPending(t *testing.T) {
	v, _ := baseConv(t, 1000)
	for i := 0; i < 10; i++ {
		v.send(0, frameOf(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_LOOKUP.Enum(),
			LookupTopic: &pulsarapi.CommandLookupTopic{Topic: ptr(fmt.Sprintf("persistent://public/default/t%d", i)), RequestId: ptr(uint64(100 + i))}}))
	}
	v.fin()
	name := writeTemp(t, "pending.pcap", writePcap(t, v.recs, 262144))
	for _, args := range [][]string{{"read", "-o", "json"}, {"stats", "-o", "json"}} {
		code, out, _, mem := runMain(t, append(args, "--max-pending", "4", name), "state-evicted")
		checkRun(t, code, ExitOK, out, mem, "state-evicted")
	}
	code, out, _, _ := runMain(t, []string{"read", "-o", "json", name}, "state-evicted")
	if code != ExitOK || out.found["state-evicted"] > 0 {
		t.Errorf("default --max-pending: exit %d, state-evicted %d", code, out.found["state-evicted"])
	}
}
