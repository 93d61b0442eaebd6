// Package cputime reads the CPU time the whole process has used (every
// thread, GC workers included), for benchmarks on a shared machine: unlike
// wall time, it does not count the time the process waits for a CPU.
package cputime

import "time"

// Process returns the user and system CPU time the process has used so
// far; ok is false where it cannot be read (then measure wall time).
func Process() (d time.Duration, ok bool) { return process() }

var start = time.Now()

// Now is Process, or where it cannot be read the wall time since the
// program started: a clock to subtract readings of.
func Now() time.Duration {
	if d, ok := process(); ok {
		return d
	}
	return time.Since(start)
}
