package cli

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// FuzzPipeline runs the whole read pipeline (capture → reassembly → decode
// → JSON and text rendering) on arbitrary capture-file bytes, seeded with
// the lab's real captures and fault variants. Whatever the bytes, Main
// must return one of the documented exit codes and never panic.
func FuzzPipeline(f *testing.F) {
	seeds := shippedCaptures(f)
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []string{"json", "text"} {
			code := Main([]string{"read", "-o", format, "-V", "-x", "--payload", "--detect", "-"},
				bytes.NewReader(data), io.Discard, io.Discard)
			switch code {
			case ExitOK, ExitInput:
			default:
				t.Fatalf("-o %s: unexpected exit code %d", format, code)
			}
		}
	})
}
