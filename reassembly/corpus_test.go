package reassembly

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/internal/fuzzseed"
)

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzAssembler from the lab
// captures: the segments of each capture's first connection in
// FuzzAssembler's record format (client 127.0.0.1:40000, server
// 127.0.0.2:6650, flags as captured, payloads cut to 255 bytes at the
// 256-byte sequence grid the format allows)
// (PULSARSCOPE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus).
func TestWriteFuzzCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("PULSARSCOPE_WRITE_CORPUS not set")
	}
	files, _ := filepath.Glob("../testdata/pcaps/*.pcap*")
	for _, name := range files {
		if filepath.Ext(name) == ".json" {
			continue
		}
		src, err := capture.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var (
			out      []byte
			srvPort  uint16
			base     [2]uint32
			haveBase [2]bool
		)
		for len(out) < 2<<10 {
			p, err := src.Next(context.Background())
			if err != nil {
				break
			}
			sp, dp := uint16(p.TCP.SrcPort), uint16(p.TCP.DstPort)
			if srvPort == 0 {
				srvPort = dp
				if sp == 6650 {
					srvPort = sp
				}
			}
			d := 0 // client → server
			if sp == srvPort {
				d = 1
			}
			if !haveBase[d] {
				base[d], haveBase[d] = p.TCP.Seq, true
			}
			var flags byte
			for i, on := range []bool{p.TCP.SYN, p.TCP.ACK, p.TCP.FIN, p.TCP.RST} {
				if on {
					flags |= 1 << i
				}
			}
			who := byte(0 | 2<<3) // cli → srv
			if d == 1 {
				who = 2 | 0<<3
			}
			rel := (p.TCP.Seq - base[d]) >> 8
			n := min(len(p.TCP.Payload), 255)
			out = append(out, flags|1<<4, who, byte(rel>>16), byte(rel>>8), byte(rel), byte(n))
			out = append(out, p.TCP.Payload[:n]...)
		}
		src.Close()
		if err := fuzzseed.Write("testdata/fuzz/FuzzAssembler", out); err != nil {
			t.Fatal(err)
		}
	}
}
