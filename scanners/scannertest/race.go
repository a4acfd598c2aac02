//go:build race

package scannertest

// raceEnabled is set when the race detector slows every call down.
const raceEnabled = true
