package filter

import (
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`type = "SEND"`, "column 6"},
		{`nosuch == 1`, "unknown name nosuch"},
		{`type`, "expected bool"},
	}
	for _, tc := range tests {
		_, err := Compile(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.src != "type" && !strings.Contains(err.Error(), "^")) {
			t.Errorf("%q: error %v, want %q and a caret", tc.src, err, tc.want)
		}
	}
	for _, ok := range []string{`type == "SEND" && latency_ms > 5`, `"checksum-mismatch" in problems`, `topic contains "orders"`, `cmd.partitions > 0`} {
		if _, err := Compile(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
