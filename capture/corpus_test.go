package capture

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/pulsarscope/pulsarscope/internal/fuzzseed"
)

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzSource (the first
// 2 KiB of every lab capture) and testdata/fuzz/FuzzDecode (the first
// packets of each, with their link type)
// (PULSARSCOPE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus).
func TestWriteFuzzCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("PULSARSCOPE_WRITE_CORPUS not set")
	}
	a, _ := filepath.Glob("../testdata/pcaps/*.pcap*")
	b, _ := filepath.Glob("testdata/*.pcap*")
	for _, name := range append(a, b...) {
		if filepath.Ext(name) == ".json" {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := fuzzseed.Write("testdata/fuzz/FuzzSource", data[:min(len(data), 2048)]); err != nil {
			t.Fatal(err)
		}
		var (
			next func() ([]byte, error)
			lt   layers.LinkType
		)
		if r, err := pcapgo.NewReader(bytes.NewReader(data)); err == nil {
			lt = r.LinkType()
			next = func() ([]byte, error) { d, _, err := r.ReadPacketData(); return d, err }
		} else if r, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.DefaultNgReaderOptions); err == nil {
			lt = r.LinkType()
			next = func() ([]byte, error) { d, _, err := r.ReadPacketData(); return d, err }
		} else {
			continue
		}
		for i := 0; i < 4; i++ {
			d, err := next()
			if err != nil {
				break
			}
			if err := fuzzseed.Write("testdata/fuzz/FuzzDecode", uint16(lt), d); err != nil {
				t.Fatal(err)
			}
		}
	}
}
