package pins

import (
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

// TestShellBounds: scripts shaped to multiply the work of the checks of
// issue 37 (loops over a file nested in each other, printf that writes
// far more than its line, jobs submitting jobs) finish quickly with
// bounded findings.
func TestShellBounds(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		maxHits int
	}{
		{"nested loops over a file", hostile.NestedFileLoops(512, 6), 4096},
		{"printf amplification", hostile.PrintfAmplifier(1000, 1000), 10},
		{"jobs submitting jobs", hostile.NestedSbatchHeredocs(200), 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			got, _ := scanText(t, "job.sh", string(tc.in))
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if len(got) > tc.maxHits {
				t.Errorf("%d findings, want at most %d", len(got), tc.maxHits)
			}
			t.Logf("%d bytes, %d findings, %v", len(tc.in), len(got), time.Since(start))
		})
	}
}
