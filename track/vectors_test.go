package track

import (
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// vectorConns rebuilds the connections of the real Java client/broker
// reads: a CONNECT starts a connection; consumer traffic (MESSAGE, ACK,
// FLOW, CLOSE_CONSUMER) belongs to the latest connection that subscribed.
func vectorConns(t testing.TB) (conns []*reassembly.Conn, feed func(h reassembly.Handler)) {
	t.Helper()
	paths, err := filepath.Glob("../testdata/vectors/java-client-1.22/*.frame")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	sort.Strings(paths)
	type read struct {
		c    *reassembly.Conn
		dir  reassembly.Dir
		data []byte
		ts   time.Time
	}
	var reads []read
	var cur, subscriber *reassembly.Conn
	for _, p := range paths {
		base := filepath.Base(p)
		ns, _ := strconv.ParseInt(base[:strings.IndexByte(base, '-')], 10, 64)
		typ := strings.TrimSuffix(base[strings.IndexByte(base, '-')+1:], ".frame")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ts := time.Unix(0, ns)
		if typ == "CONNECT" {
			id := len(conns) + 1
			cur = &reassembly.Conn{ID: id, FirstSeen: ts, HandshakeSeen: true,
				Client: netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), uint16(40000+id)),
				Server: netip.MustParseAddrPort("10.0.0.2:6650")}
			conns = append(conns, cur)
		}
		c := cur
		switch typ {
		case "SUBSCRIBE":
			subscriber = cur
		case "MESSAGE", "ACK", "FLOW", "CLOSE_CONSUMER":
			c = subscriber
		}
		dir := reassembly.ClientToServer
		switch typ {
		case "CONNECTED", "PARTITIONED_METADATA_RESPONSE", "LOOKUP_RESPONSE", "SUCCESS", "PRODUCER_SUCCESS", "SEND_RECEIPT", "MESSAGE":
			dir = reassembly.ServerToClient
		}
		reads = append(reads, read{c, dir, data, ts})
	}
	return conns, func(h reassembly.Handler) {
		for _, c := range conns {
			h.Open(c)
		}
		for _, r := range reads {
			h.Data(r.c, r.dir, r.data, r.ts)
		}
		end := reads[len(reads)-1].ts
		for _, c := range conns {
			h.Close(c, reassembly.CloseEndOfCapture, end)
		}
	}
}

// TestVectors tracks the real Java client's traffic: its request_ids start
// at 0 on every connection, every request pairs except the last
// CLOSE_CONSUMER (the reads end before its SUCCESS), acks link to messages.
func TestVectors(t *testing.T) {
	_, feed := vectorConns(t)
	col := &collector{}
	feed(decode.NewStreamDecoder(New(col, Options{}), decode.Options{}))
	zero := 0
	answered := map[string]int{}
	acks := 0
	for _, f := range col.frames {
		if f.request != nil {
			answered[f.request.Type.String()]++
			if f.typ == "PARTITIONED_METADATA_RESPONSE" {
				zero++ // request_id 0 on every connection
			}
		}
		acks += len(f.acks)
	}
	want := map[string]int{"CONNECT": 7, "PARTITIONED_METADATA": 7, "LOOKUP": 7, "SUBSCRIBE": 3, "PRODUCER": 4,
		"CLOSE_PRODUCER": 4, "SEND": 18}
	for k, v := range want {
		if answered[k] != v {
			t.Errorf("%s answered %d, want %d", k, answered[k], v)
		}
	}
	if zero != 7 {
		t.Errorf("request_id 0 paired %d times, want 7", zero)
	}
	if acks != 10 {
		t.Errorf("%d MESSAGE frames linked to acks, want 10", acks)
	}
	codes := col.codes()
	if len(codes) != 1 || codes[CodeUnanswered] != 1 || len(col.findings) != 1 || col.findings[0].Type.String() != "CLOSE_CONSUMER" {
		t.Errorf("problems %v, findings %+v; want one unanswered CLOSE_CONSUMER", codes, col.findings)
	}
}
