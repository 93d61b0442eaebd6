package cputime

import (
	"testing"
	"time"
)

// TestProcess: the CPU time grows with work done.
func TestProcess(t *testing.T) {
	c0, ok := Process()
	if !ok {
		t.Skip("no process CPU clock on this platform")
	}
	x := 0
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	c1, _ := Process()
	if c1 <= c0 {
		t.Errorf("CPU time %v then %v after %d loops", c0, c1, x)
	}
}
