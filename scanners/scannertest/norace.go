//go:build !race

package scannertest

const raceEnabled = false
