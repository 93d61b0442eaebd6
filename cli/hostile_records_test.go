package cli

import (
	"encoding/binary"
	"strings"
	"testing"
)

// TestHostileRecordLengths: pcap and pcapng records and blocks whose
// length fields claim up to 4 GiB (with a snap length of 4 GiB too) in a
// file of a few KB: exit 3 with the record named, nothing near the claim
// allocated.
func TestHostileRecordLengths(t *testing.T) {
	v, fr := baseConv(t, 1000)
	v.rest(fr)
	pcap := writePcap(t, v.recs, 262144)
	ng := writePcapng(t, v.recs)
	le := binary.LittleEndian
	cases := map[string][]byte{}
	for _, claim := range []uint32{0x7FFFFFF0, 0xFFFFFFFF} {
		// pcap: snap length claim too, then a record header claiming it.
		p := append([]byte(nil), pcap...)
		if le.Uint32(p) == 0xa1b2c3d4 {
			le.PutUint32(p[16:], claim)
		} else {
			binary.BigEndian.PutUint32(p[16:], claim)
		}
		hdr := make([]byte, 16)
		le.PutUint32(hdr[8:], claim)
		le.PutUint32(hdr[12:], claim)
		if le.Uint32(p) != 0xa1b2c3d4 {
			binary.BigEndian.PutUint32(hdr[8:], claim)
			binary.BigEndian.PutUint32(hdr[12:], claim)
		}
		cases["pcap"+hex32(claim)] = append(append(p, hdr...), make([]byte, 4096)...)
		// pcapng: an enhanced packet block claiming the length.
		blk := make([]byte, 32)
		le.PutUint32(blk[0:], 6)
		le.PutUint32(blk[4:], claim&^3)
		le.PutUint32(blk[20:], claim)
		le.PutUint32(blk[24:], claim)
		cases["pcapng"+hex32(claim)] = append(append(append([]byte(nil), ng...), blk...), make([]byte, 4096)...)
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeTemp(t, "rec.cap", data)
			code, out, stderr, mem := runMain(t, []string{"read", "-o", "json", path}, "\n{\"n\":")
			checkRun(t, code, ExitInput, out, mem)
			if out.found["\n{\"n\":"] != realFrameCount(fr) || stderr == "" {
				t.Errorf("%d frames before the bad record (want %d); stderr %q", out.found["\n{\"n\":"], realFrameCount(fr), stderr)
			}
			if mem.Allocated > 64<<20 {
				t.Errorf("allocated %s", byteSize(mem.Allocated))
			}
			t.Logf("stderr: %s", stderr)
		})
	}
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	b := []byte("-0x00000000")
	for i := 0; i < 8; i++ {
		b[10-i] = digits[v>>(4*i)&0xf]
	}
	return string(b)
}

// TestPcapngImplausibleBlock: a pcapng packet block whose captured length
// claims 2 GiB while the block holds one packet (here the handshake's last
// ACK) is left out and named, and reading goes on with the next block:
// every frame of the conversation decoded, exit 0.
func TestPcapngImplausibleBlock(t *testing.T) {
	v, fr := baseConv(t, 1000)
	v.rest(fr)
	v.fin()
	ng := writePcapng(t, v.recs)
	le := binary.LittleEndian
	// Walk the blocks to the third packet block (EPB, type 6).
	off, epbs, at := 0, 0, -1
	for off+8 <= len(ng) {
		typ, n := le.Uint32(ng[off:]), int(le.Uint32(ng[off+4:]))
		if typ == 6 {
			if epbs++; epbs == 3 {
				at = off
				break
			}
		}
		off += n
	}
	if at < 0 {
		t.Fatal("no third packet block")
	}
	le.PutUint32(ng[at+20:], 0x7ffffff0) // captured length
	name := writeTemp(t, "implausible.pcapng", ng)
	code, out, stderr, mem := runMain(t, []string{"read", "-o", "json", name}, "\n{\"n\":")
	checkRun(t, code, ExitOK, out, mem)
	if out.found["\n{\"n\":"] != realFrameCount(fr) {
		t.Errorf("%d frames, want %d", out.found["\n{\"n\":"], realFrameCount(fr))
	}
	if want := "1 pcapng packet block(s) skipped, the first at byte " + itoa(at); !strings.Contains(stderr, want) {
		t.Errorf("stderr %q lacks %q", stderr, want)
	}
}
