//go:build !mlwarden_sbatch

package scan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
)

// slowCheck holds every file until the run's context ends.
type slowCheck struct{}

func (slowCheck) Check() string                         { return "slow" }
func (slowCheck) Rules() []scanners.Rule                { return nil }
func (slowCheck) Wants(*scanners.Artifact, []byte) bool { return true }
func (slowCheck) Scan(ctx context.Context, _ *scanners.Artifact, _ scanners.Content) ([]scanners.Finding, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestTimeout: past --timeout the run stops, says why, and exits 2.
func TestTimeout(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644)
	for _, timeout := range []time.Duration{200 * time.Millisecond, 0} {
		s, err := New(Options{Scanners: []scanners.Scanner{slowCheck{}}, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // the test's own bound
		start := time.Now()
		res, err := s.Run(ctx, Target{Ref: dir})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for _, e := range res.Errors {
			msgs = append(msgs, e.Message)
		}
		got := strings.Join(msgs, "; ")
		took := time.Since(start)
		switch {
		case timeout > 0 && (!strings.Contains(got, "longer than --timeout 200ms") || took > 2*time.Second):
			t.Errorf("--timeout %s: after %s, errors %q", timeout, took, got)
		case timeout == 0 && strings.Contains(got, "--timeout"):
			t.Errorf("no --timeout, but %q", got)
		}
		if ExitCode(res.Result, nil) != ExitError {
			t.Errorf("--timeout %s: exit %d", timeout, ExitCode(res.Result, nil))
		}
	}
}

func TestFilterSeverities(t *testing.T) {
	res := &scanners.Result{Findings: []scanners.Finding{
		{Severity: scanners.SeverityCritical}, {Severity: scanners.SeverityLow}, {Severity: scanners.SeverityHigh, Suppressed: "x"}, {Severity: scanners.SeverityInfo},
	}}
	res.Summary = scanners.Summarize(res.Findings)
	FilterSeverities(res, nil)
	if len(res.Findings) != 4 || res.Summary.Hidden != 0 {
		t.Fatalf("no filter changed the result: %+v", res.Summary)
	}
	FilterSeverities(res, []scanners.Severity{scanners.SeverityCritical, scanners.SeverityHigh})
	if len(res.Findings) != 2 || res.Summary.Hidden != 2 || res.Summary.Critical != 1 || res.Summary.Suppressed != 1 || res.Summary.Low != 0 {
		t.Errorf("filtered: %d findings, summary %+v", len(res.Findings), res.Summary)
	}
}

func TestOptionsFromCIFlags(t *testing.T) {
	v, err := config.Resolve(config.CmdScan, map[string][]string{"severity": {"critical,high"}, "skip-dirs": {"testdata,fixtures"}, "skip-files": {"*.onnx"}}, func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := OptionsFrom(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Severities) != 2 || strings.Join(o.Skip.Dirs, ",") != "testdata,fixtures" || len(o.Skip.Files) != 1 {
		t.Errorf("options %+v %+v", o.Severities, o.Skip)
	}
	v, err = config.Resolve(config.CmdScan, map[string][]string{"skip-files": {"a[b"}}, func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OptionsFrom(v); err == nil || !strings.Contains(err.Error(), "bad glob") {
		t.Errorf("a bad glob: %v", err)
	}
}
