//go:build !mlwarden_sbatch

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestSeverityFlag(t *testing.T) {
	_, all := scanJSON(t, demo)
	code, res := scanJSON(t, "--severity", "critical", demo)
	if code != ExitFindings || len(res.Findings) == 0 || res.Summary.Hidden != len(all.Findings)-len(res.Findings) {
		t.Fatalf("exit %d, %d findings, hidden %d of %d", code, len(res.Findings), res.Summary.Hidden, len(all.Findings))
	}
	for _, f := range res.Findings {
		if f.Severity != scanners.SeverityCritical {
			t.Errorf("%s %s shown with --severity critical", f.RuleID, f.Severity)
		}
	}
	// Hidden findings never fail the run.
	if code, res := scanJSON(t, "--severity", "info", "--fail-on", "high", demo); code != ExitOK || res.Summary.High != 0 {
		t.Errorf("--severity info: exit %d, summary %+v", code, res.Summary)
	}
	_, _, errOut := run(t, "", "scan", "--severity", "urgent", demo)
	if !strings.Contains(errOut, "urgent") {
		t.Errorf("a bad severity: %q", errOut)
	}
}

func TestExitCodeFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--exit-code", "7"}, 7},
		{[]string{"--exit-code", "0"}, 0},
		{[]string{"--exit-code", "7", "--fail-on", "none"}, 0},
		{[]string{"--exit-code", "2"}, ExitError},
		{[]string{"--exit-code", "300"}, ExitError},
	} {
		code, _, errOut := run(t, "", append(append([]string{"scan", "-q"}, tc.args...), demo)...)
		if code != tc.want {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.want, errOut)
		}
	}
	// A scan that is not complete exits 2 whatever --exit-code says.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte("x"), 2048), 0o644)
	if code, _, _ := run(t, "", "scan", "-q", "--exit-code", "9", "--max-file-size", "1KB", dir); code != ExitError {
		t.Errorf("incomplete scan: exit %d, want 2", code)
	}
}

func TestSkipFlags(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"train.py", "testdata/train.py", "vendor/x/train.py", "old.py"} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte("import torch\nm = torch.load(p)\n"), 0o644)
	}
	paths := func(res *scanners.Result) string {
		var ps []string
		for _, f := range res.Findings {
			ps = append(ps, f.Path)
		}
		return strings.Join(ps, " ")
	}
	_, res := scanJSON(t, "--skip-dirs", "testdata,vendor", "--skip-files", "old.py", dir)
	if got := paths(res); got != "train.py" {
		t.Errorf("findings in %q, want train.py only", got)
	}
	if tg := res.Targets[0]; tg.Skipped != 3 || len(tg.Notes) != 1 || !strings.Contains(tg.Notes[0], "2 directories and 1 file") {
		t.Errorf("target %+v", tg)
	}
	// The same from the config file's keys.
	os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte("skip-dirs: [testdata, vendor]\nskip-files: [old.py]\n"), 0o644)
	if _, res := scanJSON(t, dir); paths(res) != "train.py" {
		t.Errorf("config keys: findings in %q", paths(res))
	}
	_, _, errOut := run(t, "", "scan", "--skip-files", "a[", dir)
	if !strings.Contains(errOut, "bad glob") {
		t.Errorf("a bad glob: %q", errOut)
	}
}

func TestQuiet(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	_, _, errOut := run(t, "", "scan", "--format", "json", "-o", out, demo)
	if !strings.Contains(errOut, "mlwarden: 1 target") {
		t.Errorf("no summary line on stderr: %q", errOut)
	}
	_, _, errOut = run(t, "", "scan", "-q", "--format", "json", "-o", out, demo)
	if errOut != "" {
		t.Errorf("--quiet wrote %q", errOut)
	}
}

// TestEveryFormat: each format writes, and the BOM lists the demo's model
// file with its digest.
func TestEveryFormat(t *testing.T) {
	for _, f := range []string{"cyclonedx", "junit", "gitlab", "gitlab-secrets", "html"} {
		code, out, errOut := run(t, "", "scan", "-q", "--format", f, demo)
		if code != ExitFindings || len(out) < 200 {
			t.Errorf("%s: exit %d, %d bytes, %s", f, code, len(out), errOut)
		}
		if f != "cyclonedx" {
			continue
		}
		var bom struct {
			Components []struct {
				Components []struct {
					Type, Name string
					Hashes     []struct{ Content string }
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &bom); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range bom.Components[0].Components {
			if c.Type == "machine-learning-model" && c.Name == "models/classifier.pt" && len(c.Hashes) == 1 && len(c.Hashes[0].Content) == 64 {
				found = true
			}
		}
		if !found {
			t.Errorf("the BOM lacks models/classifier.pt with its SHA-256:\n%s", out)
		}
	}
}

// TestTermProgress drives the bar as a run does, from several goroutines:
// it ends, and draws the counts.
func TestTermProgress(t *testing.T) {
	var buf syncBuffer
	p := newTermProgress(&buf, mpb.ForceTTY(), mpb.WithWidth(200))
	for _, tg := range []scanners.Target{{Name: "fixtures/demo", Kind: scanners.KindDir}, {Name: "registry:r/x:1", Kind: scanners.KindImage}} {
		p.Start(tg)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 100 {
					p.Expect(1, 10)
					p.Scanned(10)
					p.Done(1, 10)
				}
			})
		}
		wg.Wait()
		time.Sleep(400 * time.Millisecond) // a few redraws
		p.Finish(tg)
	}
	p.Wait()
	if out := buf.String(); !strings.Contains(out, "fixtures/demo") || !strings.Contains(out, "800/800 files") || !strings.Contains(out, "800/800 layers") {
		t.Errorf("drawn: %q", buf.String())
	}
}
