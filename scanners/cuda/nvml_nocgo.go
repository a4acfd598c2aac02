//go:build !cgo

package cuda

import "errors"

// probeNVML is unavailable without cgo: go-nvml needs it.
func probeNVML() (HostFacts, error) {
	return HostFacts{}, errors.New("NVML: mlwarden was built without cgo")
}
