package stats

import (
	"time"

	"github.com/pulsarscope/pulsarscope/internal/cputime"
)

var start = time.Now()

// cpuNow is the process's CPU time (internal/cputime), or the time since
// the tests started where that cannot be read.
func cpuNow() time.Duration {
	if d, ok := cputime.Process(); ok {
		return d
	}
	return time.Since(start)
}
