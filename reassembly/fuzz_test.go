package reassembly

import (
	"testing"
	"time"
)

// FuzzAssembler feeds arbitrary segment sequences (few endpoints, small
// limits, Detect on) and checks the Handler contract: Open first, nothing
// after Close (the recorder panics otherwise), every connection closed once
// after FlushAll, no negative gap, and each direction's Data and Gap bytes
// adding up to the connection's Payload. Acknowledgement numbers are
// fuzzed too, so holes are declared by ACKs as well as by time and limits.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte{0x01, 0, 0, 0, 0, 0x12, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c'})
	f.Add([]byte{0x02, 0, 10, 5, 0x22, 0xff, 0xff, 0xff, 0xf0, 8, 0, 0, 0, 4, 0, 0, 0, 0})
	// SYN, SYN-ACK, data, a lost segment acknowledged, data after it; then a
	// new SYN on the 4-tuple (port reuse) and a conflicting retransmission.
	f.Add([]byte{
		0x01, 0x10, 0, 0, 1, 0, 0, 0,
		0x03, 0x02, 0, 0, 9, 0, 0, 0,
		0x02, 0x10, 0, 0, 1, 4, 0, 0, 'a', 'b', 'c', 'd',
		0x02, 0x10, 0, 0, 2, 4, 0, 0, 'e', 'f', 'g', 'h',
		0x02, 0x02, 0, 0, 9, 2, 0, 3, 'o', 'k',
		0x01, 0x10, 0, 7, 1, 0, 0, 0,
		0x02, 0x10, 0, 7, 1, 4, 0, 0, 'w', 'x', 'y', 'z',
		0x02, 0x10, 0, 7, 1, 4, 0, 0, 'w', 'X', 'y', 'z',
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newRecorder()
		a := New(r, Options{
			MaxConns: 3, MaxBufferedBytesPerConn: 3800, MaxBufferedBytesTotal: 7600,
			GapTimeout: time.Second, IdleTimeout: 3 * time.Second, Detect: plausible,
			Ports: []uint16{6650}, TLSPorts: []uint16{6651},
		})
		eps := []ep{cli, cli2, srv, {"127.0.0.2", 6651}, {"127.0.0.9", 7000}, {"::1", 6650}, {"::2", 1234}}
		at := time.Duration(0)
		for len(data) >= 8 {
			flags, who, seq := data[0], data[1], uint32(data[2])<<24|uint32(data[3])<<16|uint32(data[4])<<8
			n := int(data[5])
			ack := uint32(data[6])<<24 | uint32(data[7])<<8
			data = data[8:]
			n = min(n, len(data))
			payload := data[:n]
			data = data[n:]
			from, to := eps[int(who&7)%len(eps)], eps[int(who>>3&7)%len(eps)]
			if (from.ip[0] == ':') != (to.ip[0] == ':') {
				continue
			}
			var fl string
			for i, c := range "SAFR" {
				if flags&(1<<i) != 0 {
					fl += string(c)
				}
			}
			at += time.Duration(flags>>4) * 300 * time.Millisecond
			tcp, flow := mkTCP(pkt{from: from, to: to, seq: seq | uint32(who), ack: ack, flags: fl, data: string(payload)})
			missing := 0
			if flags&0x40 != 0 {
				missing = int(seq >> 8 & 0x3f)
			}
			a.AssembleTruncated(flow, tcp, missing, t0.Add(at))
		}
		a.FlushAll()
		for _, c := range r.conns {
			if _, ok := r.closed[c.ID]; !ok {
				t.Fatalf("conn %d not closed", c.ID)
			}
			if got := r.bytes[c.ID]; !c.TLS && (got[0] != c.Payload[0] || got[1] != c.Payload[1]) {
				t.Fatalf("conn %d: %v bytes delivered and lost, Payload %v", c.ID, got, c.Payload)
			}
		}
		if s := a.Stats(); s.ActiveConns != 0 || s.LostBytes < 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}
