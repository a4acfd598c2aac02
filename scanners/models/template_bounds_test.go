package models

import (
	"runtime"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

// TestTemplateDoubling: set-to-itself statements that double a dict's keys,
// a namespace attribute or a list (issue 37: forty of them, 700 bytes,
// took the process down) cost what a short template costs.
func TestTemplateDoubling(t *testing.T) {
	for _, via := range []string{"dict", "namespace", "list"} {
		t.Run(via, func(t *testing.T) {
			alloc := func(n int) uint64 {
				src := hostile.TemplateDoubling(via, n)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				analyzeTemplate(src)
				runtime.ReadMemStats(&after)
				return after.TotalAlloc - before.TotalAlloc
			}
			small, big := alloc(8), alloc(40)
			if big > 16<<20 || big > 20*small+1<<20 {
				t.Errorf("%d doublings allocated %d bytes, 8 doublings %d", 40, big, small)
			}
		})
	}
}
