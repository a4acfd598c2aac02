//go:build !race && !mlwarden_sbatch

package hf_test

// raceSlowdown scales time bounds under the race detector.
const raceSlowdown = 1
