package reassembly

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
)

// plausible is the test's content detection: a Pulsar frame start.
func plausible(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	total, cmd := binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[4:8])
	return total >= 4 && total <= 5<<20 && cmd < total
}

func pulsarFrame(body string) string {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return string(b) + body
}

func TestAssembler(t *testing.T) {
	const c1, s1 = 1001, 5001 // first data sequence numbers after handshake(1000, 5000)
	type want struct {
		c2s, s2c string
		close    CloseReason
	}
	tests := []struct {
		name  string
		opts  Options
		pkts  []pkt
		noEnd bool // do not call FlushAll
		opens []string
		want  map[int]want
		stats func(t *testing.T, s Stats)
	}{
		{
			name: "in order with handshake and FIN",
			pkts: append(handshake(cli, srv, 1000, 5000),
				pkt{from: cli, to: srv, seq: c1, flags: "A", data: "hello"},
				pkt{from: srv, to: cli, seq: s1, flags: "A", data: "world"},
				pkt{from: cli, to: srv, seq: c1 + 5, flags: "A", data: "!"},
				pkt{from: cli, to: srv, seq: c1 + 6, flags: "FA"},
				pkt{from: srv, to: cli, seq: s1 + 5, flags: "FA"},
				pkt{from: cli, to: srv, seq: c1 + 7, flags: "A"}, // final ACK: no new connection
			),
			noEnd: true,
			opens: []string{"open 1 127.0.0.1:40000>127.0.0.2:6650 hs=true tls=false"},
			want:  map[int]want{1: {"hello!", "world", CloseFIN}},
			stats: func(t *testing.T, s Stats) {
				expectEqual(t, "conns", s.Conns, 1)
				expectEqual(t, "bytes", s.BytesDelivered, 11)
				expectEqual(t, "active", s.ActiveConns, 0)
			},
		},
		{
			name: "out of order",
			pkts: append(handshake(cli, srv, 1000, 5000),
				pkt{from: cli, to: srv, seq: c1 + 4, data: "EFGH"},
				pkt{from: cli, to: srv, seq: c1 + 8, data: "IJ"},
				pkt{from: cli, to: srv, seq: c1, data: "ABCD"},
				pkt{from: cli, to: srv, seq: c1 + 10, data: "K"},
			),
			want: map[int]want{1: {"ABCDEFGHIJK", "", CloseEndOfCapture}},
			stats: func(t *testing.T, s Stats) {
				expectEqual(t, "out of order", s.OutOfOrder, 2)
				expectEqual(t, "gaps", s.Gaps, 0)
			},
		},
		{
			name: "retransmission and overlap",
			pkts: append(handshake(cli, srv, 1000, 5000),
				pkt{from: cli, to: srv, seq: c1, data: "abcd"},
				pkt{from: cli, to: srv, seq: c1, data: "abcd"},     // duplicate
				pkt{from: cli, to: srv, seq: c1 + 2, data: "cdef"}, // overlap
				pkt{from: cli, to: srv, seq: c1 + 8, data: "ij"},   // ahead
				pkt{from: cli, to: srv, seq: c1 + 5, data: "fgh"},  // overlaps delivered and fills
				pkt{from: cli, to: srv, seq: c1 + 6, data: "gh"},   // duplicate
			),
			want: map[int]want{1: {"abcdefghij", "", CloseEndOfCapture}},
			stats: func(t *testing.T, s Stats) {
				expectEqual(t, "retransmissions", s.Retransmissions, 2)
				expectEqual(t, "overlaps", s.Overlaps, 2)
			},
		},
		{
			name: "missing handshake, server speaks first",
			pkts: []pkt{
				{from: srv, to: cli, seq: 777, flags: "A", data: "resp1"},
				{from: cli, to: srv, seq: 333, flags: "A", data: "req2"},
				{from: srv, to: cli, seq: 782, flags: "A", data: "resp2"},
			},
			opens: []string{"open 1 127.0.0.1:40000>127.0.0.2:6650 hs=false tls=false"},
			want:  map[int]want{1: {"req2", "resp1resp2", CloseEndOfCapture}},
		},
		{
			name: "lost segment: exact gap at end of capture",
			pkts: append(handshake(cli, srv, 1000, 5000),
				pkt{from: cli, to: srv, seq: c1, data: "0123456789"},
				pkt{from: cli, to: srv, seq: c1 + 17, data: "HIJ"},
				pkt{from: srv, to: cli, seq: s1, data: "ok"},
			),
			want: map[int]want{1: {"0123456789<gap 7>HIJ", "ok", CloseEndOfCapture}},
			stats: func(t *testing.T, s Stats) {
				expectEqual(t, "gaps", s.Gaps, 1)
				expectEqual(t, "lost", s.LostBytes, 7)
				expectEqual(t, "buffer limit hits", s.BufferLimitHits, 0)
			},
		},
		{
			name: "lost segment: gap timeout delivers before the end",
			opts: Options{GapTimeout: time.Second},
			pkts: append(handshake(cli, srv, 1000, 5000),
				pkt{from: cli, to: srv, seq: c1, data: "abc"},
				pkt{from: cli, to: srv, seq: c1 + 1003, data: "xyz", at: ms(10)},
				pkt{from: srv, to: cli, seq: s1, data: "ping", at: ms(2000)},
			),
			noEnd: true,
			want:  map[int]want{1: {"abc<gap 1000>xyz", "ping", 0}},
		},
		{
			name: "RST closes at once",
			pkts: append(handshake(cli, srv, 1000, 5000),
				pkt{from: cli, to: srv, seq: c1, data: "abc"},
				pkt{from: srv, to: cli, seq: s1, flags: "RA"},
				pkt{from: cli, to: srv, seq: c1 + 3, data: "late"},
			),
			noEnd: true,
			want:  map[int]want{1: {"abc", "", CloseRST}},
		},
		{
			name: "one FIN then end of capture",
			pkts: append(handshake(cli, srv, 1000, 5000),
				pkt{from: cli, to: srv, seq: c1, data: "abc"},
				pkt{from: cli, to: srv, seq: c1 + 3, flags: "FA"},
				pkt{from: srv, to: cli, seq: s1, data: "more"},
			),
			want: map[int]want{1: {"abc", "more", CloseEndOfCapture}},
		},
		{
			name: "sequence wrap-around",
			pkts: append(handshake(cli, srv, 0xfffffff0, 0xfffffffe),
				pkt{from: cli, to: srv, seq: 0xfffffff1, data: "0123456789"},
				pkt{from: cli, to: srv, seq: 0x00000005, data: "klmnopqrst"}, // ahead, after the wrap
				pkt{from: cli, to: srv, seq: 0xfffffffb, data: "abcdefghij"}, // crosses the wrap
				pkt{from: srv, to: cli, seq: 0xffffffff, data: "XY"},         // wraps inside
				pkt{from: srv, to: cli, seq: 0x00000001, data: "Z"},
				pkt{from: cli, to: srv, seq: 0x00000012, data: "!"}, // gap of 3
			),
			want: map[int]want{1: {"0123456789abcdefghijklmnopqrst<gap 3>!", "XYZ", CloseEndOfCapture}},
		},
		{
			name: "idle connection closed by capture time",
			opts: Options{IdleTimeout: time.Minute},
			pkts: []pkt{
				{from: cli, to: srv, seq: 1, data: "a"},
				{from: cli2, to: srv, seq: 1, data: "b", at: 30 * time.Second},
				{from: cli2, to: srv, seq: 2, data: "c", at: 70 * time.Second},
				{from: cli2, to: srv, seq: 3, data: "d", at: 80 * time.Second},
			},
			noEnd: true,
			want:  map[int]want{1: {"a", "", CloseIdle}, 2: {"bcd", "", 0}},
			stats: func(t *testing.T, s Stats) { expectEqual(t, "idle closes", s.IdleCloses, 1) },
		},
		{
			name: "connection table eviction",
			opts: Options{MaxConns: 2},
			pkts: []pkt{
				{from: cli, to: srv, seq: 1, data: "a"},
				{from: cli2, to: srv, seq: 1, data: "b", at: ms(1)},
				{from: cli, to: srv, seq: 2, data: "c", at: ms(2)},                // cli now most recent
				{from: ep{"127.0.0.3", 9}, to: srv, seq: 1, data: "x", at: ms(3)}, // evicts cli2
				{from: ep{"127.0.0.3", 9}, to: srv, seq: 2, data: "y", at: ms(4)}, // table full again: evicts cli
				{from: ep{"127.0.0.3", 9}, to: srv, seq: 3, data: "z", at: ms(5)},
			},
			want: map[int]want{1: {"ac", "", CloseEndOfCapture}, 2: {"b", "", CloseEvicted}, 3: {"xyz", "", CloseEndOfCapture}},
			stats: func(t *testing.T, s Stats) {
				expectEqual(t, "evictions", s.Evictions, 1)
				expectEqual(t, "active", s.ActiveConns, 0)
			},
		},
		{
			name: "buffer limit per connection",
			opts: Options{MaxBufferedBytesPerConn: 2500, GapTimeout: -1},
			pkts: func() []pkt {
				p := handshake(cli, srv, 1000, 5000)
				p = append(p, pkt{from: cli, to: srv, seq: c1, data: "start"})
				// 100 bytes missing, then 5 segments of 1000 bytes.
				for i := 0; i < 5; i++ {
					p = append(p, pkt{from: cli, to: srv, seq: uint32(c1 + 105 + 1000*i), data: strings.Repeat(string(rune('A'+i)), 1000)})
				}
				return p
			}(),
			want: map[int]want{1: {"start<gap 100>" + strings.Repeat("A", 1000) + strings.Repeat("B", 1000) + strings.Repeat("C", 1000) + strings.Repeat("D", 1000) + strings.Repeat("E", 1000), "", CloseEndOfCapture}},
			stats: func(t *testing.T, s Stats) {
				expectEqual(t, "buffer limit hits", s.BufferLimitHits, 1)
				expectEqual(t, "lost", s.LostBytes, 100)
			},
		},
		{
			name: "buffer limit in total",
			opts: Options{MaxBufferedBytesPerConn: -1, MaxBufferedBytesTotal: 2500, GapTimeout: -1},
			pkts: []pkt{
				{from: cli, to: srv, seq: 1, data: "a"},
				{from: cli2, to: srv, seq: 1, data: "b"},
				{from: cli, to: srv, seq: 12, data: strings.Repeat("x", 1000)},   // 10 missing
				{from: cli, to: srv, seq: 1012, data: strings.Repeat("y", 1000)}, // 2 pages buffered
				{from: cli2, to: srv, seq: 7, data: strings.Repeat("z", 1000)},   // 5 missing: total limit hit
			},
			want: map[int]want{
				1: {"a<gap 10>" + strings.Repeat("x", 1000) + strings.Repeat("y", 1000), "", CloseEndOfCapture},
				2: {"b<gap 5>" + strings.Repeat("z", 1000), "", CloseEndOfCapture},
			},
			stats: func(t *testing.T, s Stats) {
				expectEqual(t, "buffer limit hits", s.BufferLimitHits, 1)
				expectEqual(t, "lost", s.LostBytes, 15)
			},
		},
		{
			name: "TLS port: opened, counted, not delivered",
			pkts: []pkt{
				{from: cli, to: ep{"127.0.0.2", 6651}, seq: 1, flags: "S"},
				{from: cli, to: ep{"127.0.0.2", 6651}, seq: 2, data: "\x16\x03\x01hello"},
				{from: ep{"127.0.0.2", 6651}, to: cli, seq: 9, data: "\x16\x03\x03"},
			},
			opens: []string{"open 1 127.0.0.1:40000>127.0.0.2:6651 hs=true tls=true"},
			want:  map[int]want{1: {"", "", CloseEndOfCapture}},
			stats: func(t *testing.T, s Stats) {
				expectEqual(t, "tls bytes", s.TLSBytes, 11)
				expectEqual(t, "tls conns", s.TLSConns, 1)
			},
		},
		{
			name: "other ports ignored without Detect",
			pkts: []pkt{
				{from: cli, to: ep{"127.0.0.2", 8080}, seq: 1, flags: "S"},
				{from: cli, to: ep{"127.0.0.2", 8080}, seq: 2, data: pulsarFrame("x")},
				{from: cli, to: srv, seq: 2, data: "pulsar"},
			},
			opens: []string{"open 1 127.0.0.1:40000>127.0.0.2:6650 hs=false tls=false"},
			want:  map[int]want{1: {"pulsar", "", CloseEndOfCapture}},
			stats: func(t *testing.T, s Stats) { expectEqual(t, "ignored conns", s.IgnoredConns, 1) },
		},
		{
			name: "Detect: SYN sender is client; garbage ignored; mid-stream",
			opts: Options{Detect: plausible},
			pkts: []pkt{
				// Handshake seen on port 7000: the SYN sender is the client.
				{from: ep{"127.0.0.5", 5555}, to: ep{"127.0.0.6", 7000}, seq: 10, flags: "S"},
				{from: ep{"127.0.0.6", 7000}, to: ep{"127.0.0.5", 5555}, seq: 90, flags: "SA"},
				{from: ep{"127.0.0.5", 5555}, to: ep{"127.0.0.6", 7000}, seq: 11, flags: "A", data: pulsarFrame("conn")},
				{from: ep{"127.0.0.6", 7000}, to: ep{"127.0.0.5", 5555}, seq: 91, flags: "A", data: pulsarFrame("ok")},
				// HTTP on 8080: ignored.
				{from: cli, to: ep{"127.0.0.2", 8080}, seq: 1, flags: "S"},
				{from: cli, to: ep{"127.0.0.2", 8080}, seq: 2, data: "GET / HTTP/1.1\r\n\r\n"},
				{from: cli, to: ep{"127.0.0.2", 8080}, seq: 20, data: pulsarFrame("not now")},
				// Mid-stream on 9000: garbage first, then a plausible frame from 127.0.0.8.
				{from: ep{"127.0.0.7", 9000}, to: ep{"127.0.0.8", 4444}, seq: 50, data: "\xff\xff\xff\xffcontinuation"},
				{from: ep{"127.0.0.8", 4444}, to: ep{"127.0.0.7", 9000}, seq: 70, data: pulsarFrame("send")},
				{from: ep{"127.0.0.7", 9000}, to: ep{"127.0.0.8", 4444}, seq: 66, data: pulsarFrame("rcpt")},
			},
			opens: []string{
				"open 1 127.0.0.5:5555>127.0.0.6:7000 hs=true tls=false",
				"open 2 127.0.0.8:4444>127.0.0.7:9000 hs=false tls=false",
			},
			want: map[int]want{
				1: {pulsarFrame("conn"), pulsarFrame("ok"), CloseEndOfCapture},
				2: {pulsarFrame("send"), pulsarFrame("rcpt"), CloseEndOfCapture},
			},
			stats: func(t *testing.T, s Stats) { expectEqual(t, "ignored conns", s.IgnoredConns, 1) },
		},
		{
			name: "IDs in order of first appearance; IPv6",
			pkts: []pkt{
				{from: ep{"::1", 1111}, to: ep{"::2", 6650}, seq: 1, data: "v6"},
				{from: cli, to: srv, seq: 1, data: "v4"},
				{from: ep{"::2", 6650}, to: ep{"::1", 1111}, seq: 1, data: "back"},
			},
			opens: []string{
				"open 1 [::1]:1111>[::2]:6650 hs=false tls=false",
				"open 2 127.0.0.1:40000>127.0.0.2:6650 hs=false tls=false",
			},
			want: map[int]want{1: {"v6", "back", CloseEndOfCapture}, 2: {"v4", "", CloseEndOfCapture}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			a := New(r, tc.opts)
			feed(a, tc.pkts)
			if !tc.noEnd {
				a.FlushAll()
			}
			if tc.opens != nil {
				var opens []string
				for _, e := range r.events {
					if strings.HasPrefix(e, "open") {
						opens = append(opens, e)
					}
				}
				expectEqual(t, "opens", strings.Join(opens, "\n"), strings.Join(tc.opens, "\n"))
			}
			if len(r.conns) != len(tc.want) {
				t.Errorf("%d connections, want %d", len(r.conns), len(tc.want))
			}
			for id, w := range tc.want {
				expectEqual(t, "c2s", r.stream(id, ClientToServer), w.c2s)
				expectEqual(t, "s2c", r.stream(id, ServerToClient), w.s2c)
				expectEqual(t, "close", r.closed[id], w.close)
			}
			if tc.stats != nil {
				tc.stats(t, a.Stats())
			}
			if t.Failed() {
				t.Logf("events:\n%s", strings.Join(r.events, "\n"))
			}
		})
	}
}

func TestSnaplenTruncated(t *testing.T) {
	type seg struct {
		p       pkt
		missing int
	}
	tests := []struct {
		name    string
		segs    []seg
		want    string
		snaplen int64
	}{
		{"in order", []seg{
			{pkt{from: cli, to: srv, seq: 100, data: "abcdef"}, 4},
			{pkt{from: cli, to: srv, seq: 110, data: "XYZ"}, 0},
			{pkt{from: cli, to: srv, seq: 113, data: "12"}, 3},
			{pkt{from: cli, to: srv, seq: 118, data: "!"}, 0},
		}, "abcdef<gap 4>XYZ12<gap 3>!", 7},
		{"out of order", []seg{
			{pkt{from: cli, to: srv, seq: 100, data: "ab"}, 0},
			{pkt{from: cli, to: srv, seq: 110, data: "kl"}, 2},
			{pkt{from: cli, to: srv, seq: 102, data: "cd"}, 6},
			{pkt{from: cli, to: srv, seq: 114, data: "op"}, 0},
		}, "abcd<gap 6>kl<gap 2>op", 8},
		{"retransmitted in full", []seg{
			{pkt{from: cli, to: srv, seq: 100, data: "ab"}, 3},
			{pkt{from: cli, to: srv, seq: 100, data: "abcde"}, 0},
			{pkt{from: cli, to: srv, seq: 105, data: "f"}, 0},
		}, "ab<gap 3>f", 3},
		{"only payload missing", []seg{
			{pkt{from: cli, to: srv, seq: 100, data: ""}, 5},
			{pkt{from: cli, to: srv, seq: 105, data: "f"}, 0},
		}, "<gap 5>f", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder()
			a := New(r, Options{})
			for _, s := range tc.segs {
				tcp, flow := mkTCP(s.p)
				a.AssembleTruncated(flow, tcp, s.missing, t0)
				if len(tcp.Payload) != len(s.p.data) {
					t.Fatal("payload not restored")
				}
			}
			a.FlushAll()
			expectEqual(t, "stream", r.stream(1, ClientToServer), tc.want)
			st := a.Stats()
			expectEqual(t, "snaplen bytes", st.SnaplenBytes, tc.snaplen)
			expectEqual(t, "buffer limit hits", st.BufferLimitHits, 0)
		})
	}
}

func TestCloseTimestamps(t *testing.T) {
	r := newRecorder()
	a := New(r, Options{})
	feed(a, append(handshake(cli, srv, 1, 1),
		pkt{from: cli, to: srv, seq: 2, flags: "FA", at: ms(5)},
		pkt{from: srv, to: cli, seq: 2, flags: "FA", at: ms(7)}))
	expectEqual(t, "close ts", r.closeTS[1], t0.Add(ms(7)))
	feed(a, []pkt{{from: cli2, to: srv, seq: 1, data: "x", at: ms(9)}})
	a.FlushAll()
	expectEqual(t, "end ts", r.closeTS[2], t0.Add(ms(9)))
}

// TestRealCaptures runs capture → reassembly on tcpdump captures of a
// client sending 23225 bytes to 127.0.0.1:6650 and receiving 209.
func TestRealCaptures(t *testing.T) {
	for _, f := range []string{"loopback.pcap", "any-sll2.pcap", "snaplen120.pcap"} {
		t.Run(f, func(t *testing.T) {
			src, err := capture.Open(filepath.Join("testdata", f))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			r := newRecorder()
			a := New(r, Options{})
			if err := a.Run(context.Background(), src); err != nil {
				t.Fatal(err)
			}
			if len(r.conns) != 1 {
				t.Fatalf("%d conns", len(r.conns))
			}
			c := r.conns[0]
			expectEqual(t, "server", c.Server.String(), "127.0.0.1:6650")
			expectEqual(t, "handshake", c.HandshakeSeen, true)
			st := a.Stats()
			expectEqual(t, "c2s+s2c bytes", st.BytesDelivered+st.LostBytes, 23225+209)
			expectEqual(t, "close", r.closed[1], CloseFIN)
			expectEqual(t, "buffer limit hits", st.BufferLimitHits, 0)
			s := r.stream(1, ClientToServer)
			// First frame: totalSize 24 (20-byte body + 4), body 'a'...
			expectEqual(t, "first frame", binary.BigEndian.Uint32([]byte(s[:4])), 24)
			if f == "snaplen120.pcap" {
				if st.SnaplenBytes == 0 || st.SnaplenBytes != st.LostBytes {
					t.Errorf("stats %+v", st)
				}
				return
			}
			expectEqual(t, "c2s bytes", len(r.stream(1, ClientToServer)), 23225)
			expectEqual(t, "s2c bytes", len(r.stream(1, ServerToClient)), 209)
			expectEqual(t, "gaps", st.Gaps, 0)
		})
	}
}
