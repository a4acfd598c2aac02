package pins

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/mlwarden/mlwarden/scanners"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

func TestRequirements(t *testing.T) {
	checkCases(t, []tcase{
		{"ranges and names", "requirements.txt", "# comment\ntorch>=2.1\nnumpy\nscipy==1.11.4  # pinned\npandas~=2.2\nrich==13.*\n-e .\n./local/pkg\n",
			[]string{"pip-unpinned@2", "pip-unpinned@3", "pip-unpinned@5", "pip-unpinned@6", "pip-no-hash@4"}},
		{"hashes fine", "requirements.lock.txt", "torch==2.3.0 \\\n    --hash=sha256:aaaa \\\n    --hash=sha256:bbbb\nnumpy==1.26.4 --hash=sha256:cccc\n", nil},
		{"hashed file with a range", "requirements-dev.txt", "torch==2.3.0 --hash=sha256:aaaa\nblack>=24\n", []string{"pip-unpinned@2"}},
		{"extra index and vcs", "requirements.txt", "--extra-index-url https://pkgs.example.test/simple\ngit+https://example.test/o/r.git@v1.0#egg=r\nr2 @ git+https://example.test/o/r2.git@" + commit + "\n-e git+https://example.test/o/r3.git#egg=r3\n",
			[]string{"pip-extra-index-url@1", "vcs-unpinned@2", "vcs-unpinned@4"}},
		{"markers and extras", "requirements.txt", "torch[cuda]==2.3.0; sys_platform == 'linux'\nuvloop ; sys_platform != 'win32'\n",
			[]string{"pip-unpinned@2", "pip-no-hash@1"}},
		{"constraints file", "constraints.txt", "urllib3<2\n", []string{"pip-unpinned@1"}},
		{"includes without neighbours", "requirements.txt", "-r base.txt\n-c constraints.txt\n", nil},
	})
}

func TestRequirementsIncludeFollowed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "base.in.txt"), []byte("requests\n"), 0o644) // not requirements*-named: followed
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "extra.pip"), []byte("-r ../../outside.txt\nflask\n"), 0o644)
	main := []byte("-r base.in.txt\n-r sub/extra.pip\n-r ../../../etc/passwd\n")
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: dir, TargetKind: scanners.KindDir, Path: "requirements.txt"}
	found, err := scanners.ScanBytes(context.Background(), New(), a, main)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.Path+":"+f.RuleID)
	}
	slices.Sort(got)
	want := []string{"base.in.txt:pins/pip-unpinned", "sub/extra.pip:pins/pip-unpinned"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestPyproject(t *testing.T) {
	pp := "[project]\nname = \"x\"\ndependencies = [\n  \"torch>=2.1\",\n  \"numpy==1.26.4\",\n  \"lib @ git+https://example.test/o/lib.git@main\",\n]\n[project.optional-dependencies]\ndev = [\"pytest\"]\n[tool.poetry.dependencies]\npython = \"^3.10\"\nrequests = \"^2.31\"\n"
	got, _ := scanText(t, "pyproject.toml", pp)
	want := []string{"pyproject-unlocked@4", "vcs-unpinned@6"}
	if !slices.Equal(got, want) {
		t.Errorf("no lock: got %v, want %v", got, want)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "svc"), 0o755)
	os.WriteFile(filepath.Join(dir, "svc", "uv.lock"), []byte("version = 1\n"), 0o644)
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: dir, TargetKind: scanners.KindDir, Path: "svc/pyproject.toml"}
	if found, _ := scanners.ScanBytes(context.Background(), New(), a, []byte(pp)); len(found) != 0 {
		t.Errorf("with uv.lock beside it: %v", found)
	}
	// The option lets a caller (an image source, say) show what sits beside it.
	a.TargetKind = scanners.KindImage
	withLock := WithTargetFS(func(*scanners.Artifact) (fs.FS, string) {
		return fstest.MapFS{"svc/poetry.lock": {Data: []byte("x")}}, "svc"
	})
	if fs, _ := scanners.ScanBytes(context.Background(), New(withLock), a, []byte(pp)); len(fs) != 0 {
		t.Errorf("with poetry.lock through WithTargetFS: %v", fs)
	}
	if fs, _ := scanners.ScanBytes(context.Background(), New(), a, []byte(pp)); len(fs) != 2 {
		t.Errorf("image target without neighbours: %v", fs)
	}
}

// TestConcurrentScan runs one Scanner on many artifacts at once, as the
// dispatcher does (run with -race).
func TestConcurrentScan(t *testing.T) {
	s := New()
	files := benchFiles(200)
	done := make(chan error, len(files))
	for p, data := range files {
		go func() {
			a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", TargetKind: scanners.KindScript, Path: p}
			_, err := scanners.ScanBytes(context.Background(), s, a, data)
			done <- err
		}()
	}
	for range files {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
