package scanners_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestRepeatedFindingsKeepApart: identical findings on different lines of
// one file get distinct fingerprints, the first (and every finding that is
// not repeated) keeps the one it always had, and edits that move the lines
// change none of them.
func TestRepeatedFindingsKeepApart(t *testing.T) {
	sc := []scanners.Scanner{wordScanner{check: "a", word: "torch.load"}}
	run := func(files map[string][]byte) []scanners.Finding {
		return scanners.NewDispatcher(sc).Run(context.Background(), newSource(false, files)).Findings
	}
	three := "m = torch.load(p)\nx = 1\nm = torch.load(p)\nm = torch.load(p)\n"
	got := run(map[string][]byte{"load.py": []byte(three), "once.py": []byte("torch.load(q)\n")})
	if len(got) != 4 {
		t.Fatalf("findings %v", got)
	}
	seen := map[string]bool{}
	for _, f := range got {
		if seen[f.Fingerprint] {
			t.Errorf("fingerprint %s shared", f.Fingerprint)
		}
		seen[f.Fingerprint] = true
	}
	base := got[0]
	base.Fingerprint = ""
	if want := scanners.ComputeFingerprint(&base); got[0].Fingerprint != want {
		t.Errorf("first occurrence %s, want the unique fingerprint %s", got[0].Fingerprint, want)
	}
	for n, f := range got[:3] {
		if want := scanners.OccurrenceFingerprint(scanners.ComputeFingerprint(&base), n); f.Fingerprint != want {
			t.Errorf("occurrence %d: %s, want %s", n, f.Fingerprint, want)
		}
	}
	once := got[3]
	once.Fingerprint = ""
	if got[3].Fingerprint != scanners.ComputeFingerprint(&once) {
		t.Errorf("a finding that is not repeated changed its fingerprint: %s", got[3].Fingerprint)
	}
	// Lines added above and between: the same fingerprints, in order.
	moved := run(map[string][]byte{"load.py": []byte("import torch\n\n" + strings.Replace(three, "x = 1\n", "x = 1\ny = 2\n", 1)), "once.py": []byte("\ntorch.load(q)\n")})
	for i := range got {
		if moved[i].Fingerprint != got[i].Fingerprint || moved[i].Line == got[i].Line {
			t.Errorf("finding %d: %s line %d after the edit, %s line %d before", i, moved[i].Fingerprint, moved[i].Line, got[i].Fingerprint, got[i].Line)
		}
	}
}

// describer says every *.bin file is a model.
type describer struct{ wordScanner }

func (describer) Describe(a *scanners.Artifact, head []byte) (scanners.Component, bool) {
	return scanners.Component{Format: "test"}, strings.HasSuffix(a.Path, ".bin")
}

// Wants every file, as the models check wants model files.
func (describer) Wants(*scanners.Artifact, []byte) bool { return true }

func TestComponents(t *testing.T) {
	small := []byte("small model")
	big := bytes.Repeat([]byte{1}, 3<<20)
	sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	for _, tc := range []struct {
		name           string
		stream, hashes bool
		bigSHA         string
	}{
		{"local file, no hashes asked", false, false, ""},
		{"local file, hashes asked", false, true, sum(big)},
		{"stream (spooled, read whole anyway)", true, false, sum(big)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(tc.stream, map[string][]byte{"a.bin": small, "b.bin": big, "c.txt": []byte("text")})
			res := scanners.NewDispatcher([]scanners.Scanner{describer{wordScanner{check: "a", word: "x"}}},
				scanners.WithComponentHashes(tc.hashes), scanners.WithMemoryLimit(1<<20)).Run(context.Background(), src)
			if len(res.Components) != 2 {
				t.Fatalf("components %+v", res.Components)
			}
			a, b := res.Components[0], res.Components[1]
			if a.Kind != scanners.ComponentModel || a.Path != "a.bin" || a.Target != "t" || a.Format != "test" || a.Size != int64(len(small)) || a.SHA256 != sum(small) {
				t.Errorf("small model %+v", a)
			}
			if b.Path != "b.bin" || b.Size != int64(len(big)) || b.SHA256 != tc.bigSHA {
				t.Errorf("big model %+v, want sha256 %q", b, tc.bigSHA)
			}
		})
	}
}

// walkSource reports through the walk's context as a real source does.
type walkSource struct {
	*memSource
	dirs []string
}

func (w walkSource) Walk(ctx context.Context, sink scanners.Sink) error {
	p := scanners.ProgressOf(ctx)
	p.Expect(int64(len(w.files)), 0)
	for _, d := range w.dirs {
		if !scanners.SkipDir(ctx, d) {
			w.order = append(w.order, d+"/inside.txt")
			w.files[d+"/inside.txt"] = []byte("needle\n")
		}
	}
	scanners.AddComponent(ctx, scanners.Component{Kind: scanners.ComponentLayer, Layer: "sha256:2", Properties: map[string]string{"index": "1"}},
		scanners.Component{Kind: scanners.ComponentLayer, Layer: "sha256:1", Properties: map[string]string{"index": "0"}})
	err := w.memSource.Walk(ctx, sink)
	p.Done(int64(len(w.order)), 0)
	return err
}

func TestSkip(t *testing.T) {
	files := map[string][]byte{
		"a.txt": []byte("needle\n"), "testdata/x.txt": []byte("needle\n"), "sub/testdata/y.txt": []byte("needle\n"),
		"w.bin": []byte("needle\n"), "docs/w.bin.txt": []byte("needle\n"),
	}
	src := walkSource{memSource: newSource(false, maps.Clone(files)), dirs: []string{"fixtures", "src"}}
	skip := scanners.Skip{Dirs: []string{"testdata", "./fixtures/"}, Files: []string{"*.bin"}}
	if err := skip.Validate(); err != nil {
		t.Fatal(err)
	}
	res := scanners.NewDispatcher([]scanners.Scanner{wordScanner{check: "a", word: "needle"}}, scanners.WithSkip(skip)).Run(context.Background(), src)
	var paths []string
	for _, f := range res.Findings {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "a.txt docs/w.bin.txt src/inside.txt" {
		t.Errorf("scanned %v", paths)
	}
	tg := res.Targets[0]
	want := "skipped by --skip-dirs/--skip-files: 1 directory and 3 files (fixtures/, sub/testdata/y.txt, testdata/x.txt, w.bin)"
	if tg.Skipped != 4 || len(tg.Notes) != 1 || tg.Notes[0] != want {
		t.Errorf("target %+v, want the note %q", tg, want)
	}
	// Nothing skipped: no note.
	res = scanners.NewDispatcher([]scanners.Scanner{wordScanner{check: "a", word: "needle"}}).Run(context.Background(), newSource(false, files))
	if len(res.Findings) != 5 || len(res.Targets[0].Notes) != 0 || res.Targets[0].Skipped != 0 {
		t.Errorf("without skips: %d findings, target %+v", len(res.Findings), res.Targets[0])
	}
	if err := (scanners.Skip{Files: []string{"a[b"}}).Validate(); err == nil {
		t.Error("a bad glob passed")
	}
}

type recorder struct {
	mu      sync.Mutex
	events  []string
	items   int64
	scanned int64
}

func (r *recorder) Scanned(int64) {
	r.mu.Lock()
	r.scanned++
	r.mu.Unlock()
}

func (r *recorder) Start(t scanners.Target)  { r.add("start " + t.Name) }
func (r *recorder) Finish(t scanners.Target) { r.add("finish " + t.Name) }
func (r *recorder) Expect(items, _ int64)    { r.add("expect") }
func (r *recorder) Done(items, _ int64) {
	r.mu.Lock()
	r.items += items
	r.mu.Unlock()
}
func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func TestProgressAndLayers(t *testing.T) {
	rec := &recorder{}
	a := walkSource{memSource: newSource(false, map[string][]byte{"x.txt": []byte("x")})}
	b := walkSource{memSource: newSource(false, map[string][]byte{"y.txt": []byte("y")})}
	b.name = "u"
	res := scanners.NewDispatcher([]scanners.Scanner{wordScanner{check: "a", word: "needle"}}, scanners.WithProgress(rec)).Run(context.Background(), a, b)
	if got := strings.Join(rec.events, ","); got != "start t,expect,finish t,start u,expect,finish u" || rec.items != 2 || rec.scanned != 2 {
		t.Errorf("events %s, items %d, scanned %d", got, rec.items, rec.scanned)
	}
	// Layers in the image's order, each target's own.
	if len(res.Components) != 4 || res.Components[0].Layer != "sha256:1" || res.Components[1].Layer != "sha256:2" || res.Components[2].Target != "u" {
		t.Errorf("components %+v", res.Components)
	}
	// Without a dispatcher, ProgressOf does nothing.
	scanners.ProgressOf(context.Background()).Done(1, 1)
}

// TestFingerprintStable pins ComputeFingerprint: the fingerprints in users'
// baselines and ignore entries must never change for a finding that is not
// repeated. A secret's fingerprint changed once, in issue 16, from SHA-256
// over the raw secret (LegacyFingerprint, which suppress still accepts) to
// SHA-256 over its SecretKey.
func TestFingerprintStable(t *testing.T) {
	f := scanners.Finding{RuleID: "models/torch-load-unsafe", Path: "train.py", Message: "torch.load without weights_only=True unpickles arbitrary code.", Evidence: "torch.load(path)"}
	g := scanners.Finding{RuleID: "secrets/huggingface-token", Path: "/etc/profile.d/hf.sh", Layer: "sha256:cd", Message: "Hugging Face token.", Secret: "hf_not_a_real_token_value"}
	if got, want := scanners.LegacyFingerprint(&g), "sha256:15260756ebd7af185a4d1d837eec642c"; got != want {
		t.Errorf("legacy fingerprint %s, want %s as before issue 16", got, want)
	}
	if got := scanners.LegacyFingerprint(&f); got != "sha256:a2d919cb0a6f90fecddfe0b4d851b6eb" {
		t.Errorf("legacy fingerprint of a finding without a secret changed: %s", got)
	}
	all := []scanners.Finding{f, g, g}
	scanners.FingerprintAll(all, 2)
	for _, tc := range []struct {
		f    scanners.Finding
		want string
	}{{f, "sha256:a2d919cb0a6f90fecddfe0b4d851b6eb"}, {g, "sha256:0a42145a339f152d6b1a0cbf3ae18aa8"}} {
		if got := scanners.ComputeFingerprint(&tc.f); got != tc.want {
			t.Errorf("%s: fingerprint %s, want %s as before", tc.f.RuleID, got, tc.want)
		}
		if got := scanners.OccurrenceFingerprint(tc.want, 0); got != tc.want {
			t.Errorf("occurrence 0 is %s, not the finding's own", got)
		}
	}
	if all[0].Fingerprint != "sha256:a2d919cb0a6f90fecddfe0b4d851b6eb" || all[1].Fingerprint != "sha256:0a42145a339f152d6b1a0cbf3ae18aa8" || all[2].Fingerprint != all[1].Fingerprint {
		t.Errorf("FingerprintAll differs from ComputeFingerprint: %v %v %v", all[0].Fingerprint, all[1].Fingerprint, all[2].Fingerprint)
	}
}

// BenchmarkSecretKey is the cost of one secret's fingerprint key, which is
// also the cost of one offline guess at a secret from its fingerprint.
func BenchmarkSecretKey(b *testing.B) {
	for range b.N {
		scanners.SecretKey("secrets/huggingface-token", "hf_not_a_real_token_value")
	}
}
