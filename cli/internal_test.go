package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestInternalErrorIsOneLine checks that a panic escaping a command ends in
// exit code 4 and one explanatory line, never a Go stack trace.
func TestInternalErrorIsOneLine(t *testing.T) {
	var out, errOut bytes.Buffer
	code := mainWith(nil, &out, &errOut, func(root *cobra.Command) {
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error { panic("boom") }})
	}, "boom")
	if code != ExitInternal {
		t.Fatalf("exit %d, want %d", code, ExitInternal)
	}
	msg := errOut.String()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "internal error: boom") || strings.Contains(msg, "goroutine") {
		t.Fatalf("stderr is not one explanatory line: %q", msg)
	}
}
