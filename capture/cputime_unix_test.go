//go:build unix

package capture

import (
	"syscall"
	"time"
)

// processCPUTime returns the CPU time (user and system) the process has
// used so far, for benchmarks on a shared machine, where wall time waits
// for other processes.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
