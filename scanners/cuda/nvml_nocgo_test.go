//go:build !cgo

package cuda

import (
	"os"
	"testing"
)

// The NVML tests (go-nvml's dgxa100/dgxh100 mocks) need cgo and gcc.
func TestNVMLNeedsCgo(t *testing.T) {
	if os.Getenv("CI") == "true" {
		t.Fatal("built without cgo: the NVML mock tests did not run (install gcc, set CGO_ENABLED=1)")
	}
	t.Skip("built without cgo: NVML mock tests skipped")
}
