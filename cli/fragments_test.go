package cli

import (
	"encoding/binary"
	"strings"
	"testing"
)

// ipv4Fragments splits an Ethernet/IPv4 packet's IP payload into fragments
// of at most size bytes (a multiple of 8), each a packet of its own with
// the same Id, as a router on a small-MTU path would.
func ipv4Fragments(tb testing.TB, pkt []byte, size int, id uint16) [][]byte {
	const eth = 14
	ihl := int(pkt[eth]&0x0f) * 4
	hdr, payload := pkt[:eth+ihl], pkt[eth+ihl:]
	var out [][]byte
	for off := 0; off < len(payload); off += size {
		end := min(off+size, len(payload))
		f := append(append([]byte(nil), hdr...), payload[off:end]...)
		ip := f[eth:]
		binary.BigEndian.PutUint16(ip[2:], uint16(ihl+end-off))
		binary.BigEndian.PutUint16(ip[4:], id)
		flags := uint16(off / 8)
		if end < len(payload) {
			flags |= 0x2000 // more fragments
		}
		binary.BigEndian.PutUint16(ip[6:], flags)
		ip[10], ip[11] = 0, 0
		var sum uint32
		for i := 0; i < ihl; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(ip[i:]))
		}
		for sum > 0xffff {
			sum = sum>>16 + sum&0xffff
		}
		binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
		out = append(out, f)
	}
	if len(out) < 2 {
		tb.Fatalf("packet of %d bytes not fragmented at %d", len(pkt), size)
	}
	return out
}

// TestIPv4Fragments: a capture whose client→broker segments were all
// fragmented (in order, or with the last fragment first) decodes to the
// frames of the unfragmented conversation, every checksum verified, no
// byte missing; with one fragment lost, the datagram is reported as not put
// back together and its bytes as a gap of exactly its TCP payload.
func TestIPv4Fragments(t *testing.T) {
	build := func(reorder bool, lose int) (string, int, int) {
		v, fr := baseConv(t, 1000)
		v.rest(fr)
		v.fin()
		var recs []hrec
		datagrams, lostBytes := 0, 0
		for _, r := range v.recs {
			const ipTCP = 14 + 20 + 20
			if len(r.data) < ipTCP+64 || binary.BigEndian.Uint16(r.data[14+20+2:]) != 6650 { // c2s with payload
				recs = append(recs, r)
				continue
			}
			datagrams++
			frags := ipv4Fragments(t, r.data, 48, uint16(datagrams))
			if reorder {
				frags = append([][]byte{frags[len(frags)-1]}, frags[:len(frags)-1]...)
			}
			for i, f := range frags {
				if datagrams == lose && i == 1 {
					lostBytes = len(r.data) - ipTCP // the TCP payload of the datagram
					continue
				}
				recs = append(recs, hrec{ts: r.ts, data: f})
			}
		}
		if datagrams < 10 {
			t.Fatalf("only %d packets fragmented", datagrams)
		}
		return writeTemp(t, "frag.pcap", writePcap(t, recs, 262144)), realFrameCount(fr), lostBytes
	}
	for _, reorder := range []bool{false, true} {
		name, frames, _ := build(reorder, 0)
		out, errOut, code := run(t, "read", "-o", "json", "--events", name)
		if code != ExitOK || errOut != "" {
			t.Fatalf("reorder %v: exit %d: %s", reorder, code, errOut)
		}
		if n := strings.Count("\n"+out, "\n{\"n\":"); n != frames {
			t.Errorf("reorder %v: %d frames, want %d", reorder, n, frames)
		}
		for _, bad := range []string{`"ok":false`, `"event":"gap"`, `"code":"bytes-lost"`} {
			if strings.Contains(out, bad) {
				t.Errorf("reorder %v: output holds %s", reorder, bad)
			}
		}
	}
	name, _, lostBytes := build(false, 3)
	out, errOut, code := run(t, "read", "-o", "json", "--events", name)
	if code != ExitOK || !strings.Contains(errOut, "1 IP fragment datagram(s) could not be put back together") {
		t.Fatalf("one fragment lost: exit %d, stderr %q", code, errOut)
	}
	if want := `"event":"gap"`; !strings.Contains(out, want) || !strings.Contains(out, `"bytes":`+itoa(lostBytes)+`,`) {
		t.Errorf("one fragment lost: no gap of %d bytes in the output", lostBytes)
	}
}
