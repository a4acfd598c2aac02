package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepCommand: sweep of a file of targets in two shards, each with
// its report kept, merged; the merge equals scan of the same targets; the
// Job is emitted with the scan flags the user set.
func TestSweepCommand(t *testing.T) {
	dir := t.TempDir()
	for i, body := range []string{"torch>=2.0\n", "numpy\n", "requests\n"} {
		d := filepath.Join(dir, "p"+string(rune('a'+i)))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "requirements.txt"), []byte(body), 0o644)
	}
	list := filepath.Join(dir, "targets.txt")
	os.WriteFile(list, []byte("dir:"+filepath.Join(dir, "pc")+"\ndir:"+filepath.Join(dir, "pa")+"\ndir:"+filepath.Join(dir, "pb")+"\n"), 0o644)
	reports := filepath.Join(dir, "reports")
	for _, shard := range []string{"0/2", "1/2"} {
		code, _, stderr := run(t, "", "sweep", "--no-target-config", "--checks", "pins", "--shard", shard, "--report-dir", reports, "--format", "json", "-o", filepath.Join(dir, "out.json"), "@"+list)
		if code == 2 {
			t.Fatalf("sweep %s: exit 2: %s", shard, stderr)
		}
	}
	files, _ := filepath.Glob(filepath.Join(reports, "shard-*.json"))
	if len(files) != 2 {
		t.Fatalf("reports %q", files)
	}
	_, merged, stderr := run(t, "", append([]string{"sweep", "merge", "--format", "json", "--fail-on", "none"}, files...)...)
	if stderr != "" {
		t.Errorf("merge: %s", stderr)
	}
	_, single, _ := run(t, "", "scan", "--no-target-config", "--checks", "pins", "--format", "json", "--fail-on", "none",
		"dir:"+filepath.Join(dir, "pa"), "dir:"+filepath.Join(dir, "pb"), "dir:"+filepath.Join(dir, "pc"))
	if merged != single || !strings.Contains(merged, "pins/") {
		t.Errorf("merged:\n%s\nscan:\n%s", merged, single)
	}
	code, sarif, _ := run(t, "", append([]string{"sweep", "merge", "--format", "sarif", "--fail-on", "low"}, files...)...)
	if code != 1 || !strings.Contains(sarif, `"version": "2.1.0"`) {
		t.Errorf("merge as SARIF: exit %d\n%s", code, sarif)
	}

	code, out, stderr := run(t, "", "sweep", "--emit-job", "--shards", "3", "--checks", "pins", "--job-namespace", "sec", "@"+list)
	if code != 0 || !strings.Contains(out, "completionMode: Indexed") || !strings.Contains(out, "--checks=pins") || !strings.Contains(stderr, "own fs cache") {
		t.Errorf("emit-job: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr := run(t, "", "sweep", "--emit-job", "--shards", "3", "--cache-backend", "redis://:pw@h:6379", "@"+list); code != 2 || strings.Contains(stderr, "pw") {
		t.Errorf("a cache URL with a password in the manifest: exit %d, %s", code, stderr)
	}
}
