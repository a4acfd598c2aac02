//go:build !mlwarden_sbatch

package hf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
)

// hubCache writes dir into a Hub cache at root as repository folder
// (models--org--custom) at commit, as huggingface_hub does: the content in
// blobs/<etag> (the LFS sha256, else the git blob id), the snapshot's
// files as relative symlinks to them (copies when copy is set, as with
// HF_HUB_DISABLE_SYMLINKS), and refs/main.
func hubCache(t *testing.T, root, folder, commit, dir string, copyFiles bool) string {
	t.Helper()
	files, err := hubtest.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, folder)
	snap := filepath.Join(repo, "snapshots", commit)
	for _, d := range []string{filepath.Join(repo, "blobs"), filepath.Join(repo, "refs"), snap} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		etag := f.OID
		if f.LFS != "" {
			etag = f.LFS
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "blobs", etag), data, 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(snap, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if copyFiles {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		up := strings.Repeat("../", 2+strings.Count(f.Path, "/"))
		if err := os.Symlink(up+"blobs/"+etag, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestCacheSameFindingsAsDisk: a snapshot of a Hub cache reports what the
// same files report as a directory; a repository's folder and the cache
// root report every snapshot, with paths from where they were named.
func TestCacheSameFindingsAsDisk(t *testing.T) {
	dir := modelRepo(t)
	const commit = "0123456789abcdef0123456789abcdef01234567"
	const other = "89abcdef0123456789abcdef0123456789abcdef"
	root := filepath.Join(t.TempDir(), "hub")
	snap := hubCache(t, root, "models--org--custom", commit, dir, false)
	small := t.TempDir()
	os.WriteFile(filepath.Join(small, "train.py"), []byte("import torch\nm = torch.load('x.pt')\n"), 0o644)
	hubCache(t, root, "datasets--org--data", other, small, true)
	os.WriteFile(filepath.Join(root, "version.txt"), []byte("1"), 0o644)
	os.MkdirAll(filepath.Join(root, ".locks", "models--org--custom"), 0o755)

	for _, p := range []string{snap, filepath.Dir(snap), filepath.Dir(filepath.Dir(snap)), root, snap + "/malicious"} {
		if !hf.IsCache(p) {
			t.Errorf("IsCache(%s) = false", p)
		}
	}
	for _, p := range []string{dir, t.TempDir(), filepath.Join(dir, "benign")} {
		if hf.IsCache(p) {
			t.Errorf("IsCache(%s) = true", p)
		}
	}

	res := run(t, hf.Options{}, nil, snap, dir, filepath.Dir(filepath.Dir(snap)), root, small)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	want := findings(res, dir)
	sameFindings(t, "snapshot", findings(res, snap), want, "")
	tg := target(res, snap)
	if tg.Kind != scanners.KindDir || tg.Digest != commit || !strings.Contains(strings.Join(tg.Notes, ""), "model org/custom at commit "+commit+" (refs main point at it)") {
		t.Errorf("snapshot target %+v", tg)
	}
	sameFindings(t, "repository folder", findings(res, filepath.Dir(filepath.Dir(snap))), want, "snapshots/"+commit+"/")
	var custom, data []scanners.Finding
	for _, f := range findings(res, root) {
		switch {
		case strings.HasPrefix(f.Path, "models--org--custom/snapshots/"+commit+"/"):
			custom = append(custom, f)
		case strings.HasPrefix(f.Path, "datasets--org--data/snapshots/"+other+"/"):
			data = append(data, f)
		default:
			t.Errorf("cache root: finding at %s", f.Path)
		}
	}
	sameFindings(t, "cache root", custom, want, "models--org--custom/snapshots/"+commit+"/")
	sameFindings(t, "cache root, copied files", data, findings(res, small), "datasets--org--data/snapshots/"+other+"/")
}

// TestCacheLinkOut: a snapshot link that leads out of the repository's
// folder is an error, never followed; the other files are scanned.
func TestCacheLinkOut(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# model\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte("torch\n"), 0o644)
	const commit = "0123456789abcdef0123456789abcdef01234567"
	root := t.TempDir()
	snap := hubCache(t, root, "models--org--m", commit, dir, false)
	secret := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(secret, []byte("AWS_SECRET_ACCESS_KEY=never-read\n"), 0o644)
	if err := os.Symlink(secret, filepath.Join(snap, "config.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../outside", filepath.Join(snap, "up.txt")); err != nil {
		t.Fatal(err)
	}
	res := run(t, hf.Options{}, nil, snap)
	var paths []string
	for _, e := range res.Errors {
		if !strings.Contains(e.Message, "a symlink leads out of the cache's repository folder: not followed") {
			t.Errorf("error %+v", e)
		}
		paths = append(paths, e.Path)
	}
	if strings.Join(paths, ",") != "config.json,up.txt" {
		t.Errorf("errors at %v, want config.json and up.txt", paths)
	}
	if len(findings(res, snap)) == 0 {
		t.Error("the other files were not scanned")
	}
	for _, f := range res.Findings {
		if strings.Contains(f.Message, "AWS") || f.Path == "config.json" {
			t.Errorf("read through the link: %+v", f)
		}
	}
}

// TestCacheConfigNotRead: a cached repository's .mlwarden.yaml is its
// author's; it never configures (or suppresses findings of) the scan.
func TestCacheConfigNotRead(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# m\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte("ignore:\n  - rule: \"*\"\n    reason: the author says so\n"), 0o644)
	const commit = "0123456789abcdef0123456789abcdef01234567"
	snap := hubCache(t, t.TempDir(), "models--org--m", commit, dir, true)
	for _, targets := range [][]string{{snap}, {"dir:" + snap}} {
		v, err := scan.Configure("scan", nil, noEnv, targets)
		if err != nil {
			t.Fatal(err)
		}
		if f := v.File(); f != nil {
			t.Errorf("%v: the snapshot's config %s was read", targets, f.Path)
		}
	}
	// The same file in a plain directory is the user's: it is read.
	v, err := scan.Configure("scan", nil, noEnv, []string{dir})
	if err != nil || v.File() == nil {
		t.Errorf("a plain directory's config was not read: %v", err)
	}
}

// TestCacheHiddenFiles: a repository's folder or a cache root is read
// through its snapshots and, besides them, every other file as a plain
// file: a blob no snapshot links, a file beside blobs/, a ref that holds
// something else than a commit, .locks; a blob a snapshot links is read
// once, as the snapshot's file; a snapshot target is that snapshot only
// (issue 37, item 20).
func TestCacheHiddenFiles(t *testing.T) {
	token := hostile.Token(20)
	root := filepath.Join(t.TempDir(), "hub")
	repo, err := hostile.HubCacheBeside(root, token)
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(repo, "snapshots", hostile.HubCacheCommit)
	link := "snapshots/" + hostile.HubCacheCommit + "/settings.env"
	for _, tc := range []struct {
		name, target string
		want         map[string]string // path: check
		note         string
	}{
		{"repository folder", repo, map[string]string{
			link: "secrets", "blobs/unlinked": "models", "evil.pkl": "models", "refs/pr/1": "secrets",
		}, "Hugging Face cache: 3 file(s) outside the snapshots (blobs no snapshot links to, files beside the cache's own) were scanned as plain files: blobs/unlinked, evil.pkl, refs/pr/1"},
		{"cache root", root, map[string]string{
			"models--org--beside/" + link: "secrets", "models--org--beside/blobs/unlinked": "models",
			"models--org--beside/evil.pkl": "models", "models--org--beside/refs/pr/1": "secrets",
			".locks/models--org--beside/x.lock": "secrets",
		}, "Hugging Face cache: 4 file(s) outside the snapshots"},
		{"snapshot", snap, map[string]string{"settings.env": "secrets"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, hf.Options{}, nil, tc.target)
			if len(res.Errors) > 0 {
				t.Fatalf("errors: %+v", res.Errors)
			}
			got := map[string]string{}
			for _, f := range findings(res, tc.target) {
				if f.Check == "signatures" {
					continue // the pickles' directory is unsigned: beside the point
				}
				if got[f.Path] != "" && got[f.Path] != f.Check {
					t.Errorf("%s: findings of %s and %s", f.Path, got[f.Path], f.Check)
				}
				got[f.Path] = f.Check
			}
			for p, check := range tc.want {
				if got[p] != check {
					t.Errorf("%s: finding of %q, want %q", p, got[p], check)
				}
			}
			for p := range got {
				if _, ok := tc.want[p]; !ok {
					t.Errorf("unexpected finding at %s (a linked blob read twice?)", p)
				}
			}
			if notes := strings.Join(target(res, tc.target).Notes, "\n"); !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
		})
	}
}
