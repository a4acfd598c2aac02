//go:build cgo

package cuda

// HostFromNVML lets the external tests (the vulns check's judgement of
// NVML host facts) read host facts from go-nvml's mocks.
var HostFromNVML = hostFromNVML
