// Package fuzzseed writes seed-corpus files in the format of Go's native
// fuzzing (testdata/fuzz/FuzzX/NAME), so that each package's committed
// corpus can be regenerated from the lab captures in testdata by its
// TestWriteFuzzCorpus (run with PULSARSCOPE_WRITE_CORPUS=1).
package fuzzseed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Enabled reports whether corpus files should be (re)written.
func Enabled() bool { return os.Getenv("PULSARSCOPE_WRITE_CORPUS") != "" }

// Encode renders one corpus entry: the header line, then one Go literal per
// argument ([]byte, string, uint16, uint32, int, bool).
func Encode(args ...any) ([]byte, error) {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
		case uint16:
			fmt.Fprintf(&b, "uint16(%d)\n", v)
		case uint32:
			fmt.Fprintf(&b, "uint32(%d)\n", v)
		case int:
			fmt.Fprintf(&b, "int(%d)\n", v)
		case bool:
			fmt.Fprintf(&b, "bool(%t)\n", v)
		default:
			return nil, fmt.Errorf("fuzzseed: unsupported type %T", a)
		}
	}
	return []byte(b.String()), nil
}

// Write stores one entry in dir (testdata/fuzz/FuzzX), named by the hash
// of its content like 'go test -fuzz' names its finds.
func Write(dir string, args ...any) error {
	data, err := Encode(args...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	return os.WriteFile(filepath.Join(dir, "seed-"+hex.EncodeToString(sum[:8])), data, 0o644)
}
