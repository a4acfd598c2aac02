package cli

import (
	"math"
	"runtime/debug"

	"github.com/mlwarden/mlwarden/scanners/config"
)

// setMemoryLimit applies --max-memory as Go's soft memory limit: near it
// the collector runs more often, so that a burst of allocation (several
// large files at once) is returned instead of growing the heap. It is the
// second line: each parser bounds what one file can make it hold, so the
// limit is not what keeps a hostile input from killing the process.
func setMemoryLimit(v *config.Values) {
	if !v.Has("max-memory") {
		return
	}
	n := v.Size("max-memory")
	if n <= 0 {
		n = math.MaxInt64
	}
	debug.SetMemoryLimit(n)
}
