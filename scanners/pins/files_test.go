package pins

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// openRoot is dir as a source hands it to checks: an os.Root's FS.
func openRoot(t *testing.T, dir string) fs.FS {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.FS()
}

// findingPaths scans one artifact and returns "path:rule" for each finding.
func findingPaths(t *testing.T, a *scanners.Artifact, data []byte) []string {
	t.Helper()
	found, err := scanners.ScanBytes(context.Background(), New(), a, data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.Path+":"+f.RuleID)
	}
	slices.Sort(got)
	return got
}

func TestRequirementsIncludeFollowed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "base.in.txt"), []byte("requests\n"), 0o644) // not requirements*-named: followed
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "extra.pip"), []byte("-r ../../outside.txt\nflask\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "requirements-dev.txt"), []byte("pytest\n"), 0o644) // its own artifact: not followed
	main := []byte("-r base.in.txt\n-r sub/extra.pip\n-r requirements-dev.txt\n-r ../../../etc/passwd\n")
	want := []string{"base.in.txt:pins/pip-unpinned", "sub/extra.pip:pins/pip-unpinned"}
	for _, kind := range []scanners.TargetKind{scanners.KindDir, scanners.KindRepo} {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: dir, TargetKind: kind, Path: "requirements.txt", FS: openRoot(t, dir)}
		if got := findingPaths(t, a, main); !slices.Equal(got, want) {
			t.Errorf("%s target: got %v, want %v", kind, got, want)
		}
	}
	// A single-file target is rooted at the file's directory, and follows
	// every include it can read.
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: filepath.Join(dir, "requirements.txt"), TargetKind: scanners.KindFile, Path: "requirements.txt", FS: openRoot(t, dir)}
	want = []string{"base.in.txt:pins/pip-unpinned", "requirements-dev.txt:pins/pip-unpinned", "sub/extra.pip:pins/pip-unpinned"}
	if got := findingPaths(t, a, main); !slices.Equal(got, want) {
		t.Errorf("file target: got %v, want %v", got, want)
	}
}

// TestNeighboursThroughFS: the check reads neighbours through Artifact.FS,
// never through Target, which is only the report's display name.
func TestNeighboursThroughFS(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "svc"), 0o755)
	os.WriteFile(filepath.Join(dir, "svc", "uv.lock"), []byte("version = 1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "svc", "base.in"), []byte("requests\n"), 0o644)
	pp := []byte("[project]\nname = \"x\"\ndependencies = [\"torch>=2.1\"]\n")
	gone := filepath.Join(dir, "no such directory") // what the report calls the target
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: gone, TargetKind: scanners.KindDir, Path: "svc/pyproject.toml", FS: openRoot(t, dir)}
	if got := findingPaths(t, a, pp); len(got) != 0 {
		t.Errorf("pyproject.toml with uv.lock beside it: %v", got)
	}
	a.Path = "svc/requirements.txt"
	if got, want := findingPaths(t, a, []byte("-r base.in\n")), []string{"svc/base.in:pins/pip-unpinned"}; !slices.Equal(got, want) {
		t.Errorf("include beside it: got %v, want %v", got, want)
	}
	// And Target is never opened: with no FS there are no neighbours, even
	// when Target names the real directory.
	a = &scanners.Artifact{Kind: scanners.ArtifactFile, Target: dir, TargetKind: scanners.KindDir, Path: "svc/requirements.txt"}
	if got := findingPaths(t, a, []byte("-r base.in\n")); len(got) != 0 {
		t.Errorf("without FS: %v", got)
	}
}

func TestPyproject(t *testing.T) {
	pp := "[project]\nname = \"x\"\ndependencies = [\n  \"torch>=2.1\",\n  \"numpy==1.26.4\",\n  \"lib @ git+https://example.test/o/lib.git@main\",\n]\n[project.optional-dependencies]\ndev = [\"pytest\"]\n[tool.poetry.dependencies]\npython = \"^3.10\"\nrequests = \"^2.31\"\n"
	got, fs := scanText(t, "pyproject.toml", pp)
	want := []string{"pyproject-unlocked@4", "vcs-unpinned@6"}
	if !slices.Equal(got, want) {
		t.Errorf("no lock: got %v, want %v", got, want)
	}
	for _, f := range fs {
		if f.RuleID == rulePyprojectNoLock.ID && !strings.Contains(f.Message, "could be seen") {
			t.Errorf("without a file system the message should say no lock could be seen: %s", f.Message)
		}
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "svc"), 0o755)
	os.WriteFile(filepath.Join(dir, "svc", "uv.lock"), []byte("version = 1\n"), 0o644)
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: dir, TargetKind: scanners.KindDir, Path: "svc/pyproject.toml", FS: openRoot(t, dir)}
	if got := findingPaths(t, a, []byte(pp)); len(got) != 0 {
		t.Errorf("with uv.lock beside it: %v", got)
	}
	a.FS = openRoot(t, t.TempDir())
	if got := findingPaths(t, a, []byte(pp)); len(got) != 2 {
		t.Errorf("with no lock beside it: %v", got)
	}
	// Any file system will do (an image source could give one).
	a.TargetKind = scanners.KindImage
	a.FS = fstest.MapFS{"svc/poetry.lock": {Data: []byte("x")}}
	if got := findingPaths(t, a, []byte(pp)); len(got) != 0 {
		t.Errorf("with poetry.lock in a MapFS: %v", got)
	}
	a.FS = nil
	if got := findingPaths(t, a, []byte(pp)); len(got) != 2 {
		t.Errorf("image target without neighbours: %v", got)
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
