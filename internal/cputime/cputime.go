// Package cputime reads the CPU time the whole process has used (every
// thread, GC workers included), for benchmarks on a shared machine: unlike
// wall time, it does not count the time the process waits for a CPU.
package cputime

import "time"

// Process returns the user and system CPU time the process has used so
// far; ok is false where it cannot be read (then measure wall time).
func Process() (d time.Duration, ok bool) { return process() }
