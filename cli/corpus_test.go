package cli

import (
	"os"
	"testing"

	"github.com/pulsarscope/pulsarscope/internal/fuzzseed"
)

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzPipeline from the lab
// captures under 64 KiB (PULSARSCOPE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus).
func TestWriteFuzzCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("PULSARSCOPE_WRITE_CORPUS not set")
	}
	seeds := shippedCaptures(t)
	for _, s := range seeds {
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
