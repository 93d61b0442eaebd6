// Package cli holds pulsarscope's cobra commands.
package cli

import (
	"fmt"
	"io"
)

// Main runs pulsarscope with args and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "pulsarscope: not built yet")
	return 2
}
