//go:build linux

package stats

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuNow is the CPU time of the whole process (every thread, GC workers
// included): unlike wall time, it does not count the time the process
// waits for a CPU on a busy machine.
func cpuNow() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
