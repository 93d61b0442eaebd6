package reassembly

import (
	"testing"
	"time"
)

// FuzzAssembler feeds arbitrary segment sequences (few endpoints, small
// limits, Detect on) and checks the Handler contract: Open first, nothing
// after Close (the recorder panics otherwise), every connection closed once
// after FlushAll, no negative gap.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte{0x01, 0, 0, 0, 0, 0x12, 0, 0, 0, 3, 'a', 'b', 'c'})
	f.Add([]byte{0x02, 0, 10, 5, 0x22, 0xff, 0xff, 0xff, 0xf0, 8, 0, 0, 0, 4, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newRecorder()
		a := New(r, Options{
			MaxConns: 3, MaxBufferedBytesPerConn: 2 * pageBytes, MaxBufferedBytesTotal: 4 * pageBytes,
			GapTimeout: time.Second, IdleTimeout: 3 * time.Second, Detect: plausible,
			Ports: []uint16{6650}, TLSPorts: []uint16{6651},
		})
		eps := []ep{cli, cli2, srv, {"127.0.0.2", 6651}, {"127.0.0.9", 7000}, {"::1", 6650}, {"::2", 1234}}
		at := time.Duration(0)
		for len(data) >= 6 {
			flags, who, seq := data[0], data[1], uint32(data[2])<<24|uint32(data[3])<<16|uint32(data[4])<<8
			n := int(data[5])
			data = data[6:]
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
			tcp, flow := mkTCP(pkt{from: from, to: to, seq: seq | uint32(who), flags: fl, data: string(payload)})
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
		}
		if s := a.Stats(); s.ActiveConns != 0 || s.LostBytes < 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}
