//go:build !linux

package stats

import "time"

var start = time.Now()

// cpuNow falls back to wall time where the process CPU clock is not read.
func cpuNow() time.Duration { return time.Since(start) }
