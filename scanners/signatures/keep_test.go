package signatures

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// recordSource walks a directory through a ResultSink: it records each
// file's Record (ArtifactResult), or, given records, replays them all and
// scans nothing (a cache that holds every file).
type recordSource struct {
	name   string
	fsys   fs.FS
	recs   []scanners.Record
	replay bool
	noFS   bool
}

func (s *recordSource) Target() scanners.Target {
	return scanners.Target{Name: s.name, Kind: scanners.KindDir}
}

func (s *recordSource) Walk(ctx context.Context, sink scanners.Sink) error {
	rs := sink.(scanners.ResultSink)
	if s.replay {
		for _, rec := range s.recs {
			if !s.noFS {
				rec.FS = s.fsys
			}
			rs.Replay(s.name, rec)
		}
		return nil
	}
	return fs.WalkDir(s.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := s.fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, _ := f.Stat()
		rec, err := rs.ArtifactResult(&scanners.Artifact{Kind: scanners.ArtifactFile, Target: s.name, TargetKind: scanners.KindDir,
			Path: p, Size: fi.Size(), Mode: fi.Mode(), FS: s.fsys}, f)
		s.recs = append(s.recs, rec)
		return err
	})
}

func findingLines(res *scanners.Result) []string {
	var out []string
	for _, f := range res.Findings {
		out = append(out, fmt.Sprintf("%s %s %s:%d %s", f.RuleID, f.Severity, f.Path, f.Line, f.Message))
	}
	return out
}

// TestStateReplay: a target whose every file is replayed from records
// (none scanned again) gets the findings a scan gives — manifests verified
// against the seeded and read digests, signatures judged, unsigned
// directories reported once — and without the target's file system the
// replay is an error, never a silent pass.
func TestStateReplay(t *testing.T) {
	dir := t.TempDir()
	sum := sha256.Sum256([]byte("alpha"))
	good := hex.EncodeToString(sum[:])
	write(t, dir, map[string]string{
		"w/a.bin":               "alpha",
		"w/b.bin":               "bravo",
		"w/SHA256SUMS":          good + "  a.bin\n" + good + "  b.bin\n" + good + "  gone.bin\nnot a line\n",
		"w/model.sig":           `{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}`,
		"w/a.bin.sig":           "MEUCIQ==",
		"w/a.bin.sigstore.json": "{",
		"m/model.safetensors":   "version https://git-lfs.github.com/spec/v1\noid sha256:" + strings.Repeat("4d", 32) + "\nsize 123456789\n",
		"n/weights.bin":         strings.Repeat("x", 2000),
		"n/more.pt":             strings.Repeat("y", 2000),
	})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	scan := func(src *recordSource) *scanners.Result {
		s, err := New()
		if err != nil {
			t.Fatal(err)
		}
		return scanners.NewDispatcher([]scanners.Scanner{s}, scanners.WithWorkers(4)).Run(context.Background(), src)
	}
	cold := &recordSource{name: dir, fsys: root.FS()}
	want := findingLines(scan(cold))
	for _, rule := range []string{"checksum-mismatch", "file-missing", "manifest-malformed", "unsigned", "lfs-pointer-only", "invalid", "unverified"} {
		if !slices.ContainsFunc(want, func(l string) bool { return strings.HasPrefix(l, "signatures/"+rule+" ") }) {
			t.Fatalf("the scan has no %s finding: the fixture does not test what it should\n%s", rule, strings.Join(want, "\n"))
		}
	}
	states := 0
	for _, r := range cold.recs {
		states += len(r.States)
	}
	if states == 0 {
		t.Fatal("no state kept")
	}
	warm := scan(&recordSource{name: dir, fsys: root.FS(), recs: cold.recs, replay: true})
	if got := findingLines(warm); !slices.Equal(got, want) {
		t.Errorf("replayed:\n%s\nscanned:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(warm.Errors) > 0 {
		t.Errorf("errors: %+v", warm.Errors)
	}
	noFS := scan(&recordSource{name: dir, fsys: root.FS(), recs: cold.recs, replay: true, noFS: true})
	if len(noFS.Errors) == 0 {
		t.Errorf("a replay without the target's file system gave no error: %v", findingLines(noFS))
	}
}
