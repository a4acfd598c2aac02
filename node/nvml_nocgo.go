//go:build !cgo

package node

import (
	"context"
	"errors"
)

// probeNVML is unavailable without cgo: go-nvml needs it.
func probeNVML(context.Context) (GPUFacts, error) {
	return GPUFacts{}, errors.New("NVML: mlwarden was built without cgo")
}
