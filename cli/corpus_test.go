package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pulsarscope/pulsarscope/internal/fuzzseed"
)

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzPipeline from the lab
// captures under 64 KiB (PULSARSCOPE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus).
func TestWriteFuzzCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("PULSARSCOPE_WRITE_CORPUS not set")
	}
	seeds, _ := filepath.Glob("../testdata/pcaps/*.pcap*")
	for _, s := range seeds {
		if filepath.Ext(s) == ".json" {
			continue
		}
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 64<<10 {
			if err := fuzzseed.Write("testdata/fuzz/FuzzPipeline", b); err != nil {
				t.Fatal(err)
			}
		}
	}
}
