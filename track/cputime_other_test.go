//go:build !linux

package track

import "time"

var start = time.Now()

// cpuNow falls back to wall time where the process CPU clock is not read.
func cpuNow() time.Duration { return time.Since(start) }
