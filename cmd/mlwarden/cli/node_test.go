//go:build !mlwarden_sbatch

package cli

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/node/nodetest"
	"github.com/mlwarden/mlwarden/scanners"
)

func nodeJSON(t *testing.T, args ...string) (int, *scanners.Result, string) {
	t.Helper()
	code, out, errOut := run(t, "", append([]string{"node", "--format", "json"}, args...)...)
	var res scanners.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	return code, &res, errOut
}

// TestNodeHere runs the real audit of this machine: it must finish, find
// its own process, and say that NVML is absent as a note, not a failure.
func TestNodeHere(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	code, res, errOut := nodeJSON(t, "--fail-on", "none")
	if code != ExitOK && code != ExitError {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(res.Targets) != 1 || res.Targets[0].Kind != scanners.KindNode {
		t.Fatalf("targets %+v", res.Targets)
	}
	notes := strings.Join(res.Targets[0].Notes, "\n")
	if _, err := os.Stat("/dev/nvidiactl"); err != nil && !strings.Contains(notes, "NVML") {
		t.Errorf("no NVML note: %q", notes)
	}
	for _, f := range res.Findings {
		if f.Path == "proc/"+strconv.Itoa(os.Getpid()) {
			t.Errorf("flagged the test itself: %s", f.Message)
		}
	}
}

func TestNodeRoot(t *testing.T) {
	dir := t.TempDir()
	tr := nodetest.Clean(filepath.Join(dir, "clean"))
	tr.Close()
	gpu := filepath.Join(dir, "gpu.csv")
	if err := os.WriteFile(gpu, []byte(nodetest.CleanGPU), 0o644); err != nil {
		t.Fatal(err)
	}
	code, res, _ := nodeJSON(t, "--root", tr.Dir, "--gpu-processes", gpu, "--fail-on", "medium")
	if code != ExitOK {
		t.Errorf("clean node: exit %d: %+v", code, res.Findings)
	}
	procs := 0
	for _, c := range res.Components {
		if c.Kind == "gpu-process" {
			procs++
		}
	}
	if procs != 6 {
		t.Errorf("inventory: %d GPU processes, want 6: %+v", procs, res.Components)
	}

	tr = nodetest.Clean(filepath.Join(dir, "intruded"))
	nodetest.Intrude(tr)
	tr.Close()
	if err := os.WriteFile(gpu, []byte(nodetest.IntrudedGPU), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "evidence.tar.gz")
	code, res, _ = nodeJSON(t, "--root", tr.Dir, "--gpu-processes", gpu, "--capture", bundle)
	if code != ExitFindings {
		t.Errorf("intruded node: exit %d", code)
	}
	rules := map[string]bool{}
	for _, f := range res.Findings {
		rules[f.RuleID] = true
	}
	for _, r := range []string{"node/miner-process", "node/miner-connection", "node/kernel-thread-masquerade", "node/gpu-process-outside-allocation",
		"node/notebook-exposed", "node/service-exposed", "node/persistence-cron", "node/persistence-user-service", "node/gpu-device-unfenced"} {
		if !rules[r] {
			t.Errorf("no %s", r)
		}
	}
	names := bundleNames(t, bundle)
	for _, want := range []string{"proc/6666/cmdline", "proc/6666/exe.link", "proc/6666/sockets.txt", "proc/6666/environ.names", "var/spool/cron/crontabs/alice", "report.json"} {
		if !slices.Contains(names, want) {
			t.Errorf("bundle lacks %s: %v", want, names)
		}
	}

	// An ignore entry suppresses a node finding as in scan.
	cfg := filepath.Join(dir, "cfg.yaml")
	os.WriteFile(cfg, []byte("ignore:\n  - rule: node/gpu-device-unfenced\n    reason: fenced by the site's udev rule\n"), 0o644)
	_, res, _ = nodeJSON(t, "--root", tr.Dir, "--gpu-processes", gpu, "--config", cfg)
	for _, f := range res.Findings {
		if f.RuleID == "node/gpu-device-unfenced" && f.Suppressed == "" {
			t.Errorf("not suppressed: %s", f.Path)
		}
	}
}

func bundleNames(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name)
	}
}
