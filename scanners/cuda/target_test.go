package cuda

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// TestTargetCheckConformance: the per-target check passes what every check
// passes.
func TestTargetCheckConformance(t *testing.T) {
	s, err := New(WithInventory("../../fixtures/cuda/inventory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seeds := scannertest.DirSeeds(t, "../../fixtures/cuda")
	scannertest.Conformance(t, s.PerTarget(nil), seeds...)
}

type artifactData struct {
	a    scanners.Artifact
	data string
}

// finishTarget scans the artifacts with c as the dispatcher would and
// finishes their target.
func finishTarget(t *testing.T, c *TargetCheck, target string, arts ...artifactData) []scanners.Finding {
	t.Helper()
	ctx := context.Background()
	for _, x := range arts {
		a := x.a
		a.Target = target
		head := []byte(x.data)[:min(len(x.data), scanners.HeadSize)]
		if !c.Wants(&a, head) {
			continue
		}
		if fs, err := scanners.ScanBytes(ctx, c, &a, []byte(x.data)); err != nil || len(fs) > 0 {
			t.Fatalf("Scan %s: %v %v", a.Path, fs, err)
		}
	}
	fs, err := c.FinishTarget(ctx, scanners.Target{Name: target})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestTargetCheckCombines: a target's artifacts are judged together (an
// image's config and its compat library: 804 on a GeForce), each problem is
// a finding of its rule at the declaration, and the verdicts are kept per
// target.
func TestTargetCheckCombines(t *testing.T) {
	s, err := New(WithPool("gaming", host("535.104.05", "8.9:geforce")), WithPool("dc", host("535.104.05", "9.0:nvidia")))
	if err != nil {
		t.Fatal(err)
	}
	cfg := `{"config":{"Env":["CUDA_VERSION=12.2.0","NVIDIA_DISABLE_REQUIRE=1"]}}`
	image := []artifactData{
		{scanners.Artifact{Kind: scanners.ArtifactImageConfig, Path: "config"}, cfg},
		{scanners.Artifact{Kind: scanners.ArtifactFile, Path: "/usr/local/cuda-13.0/compat/libcuda.so.580.65.06"}, "\x7fELF\x00"},
		{scanners.Artifact{Kind: scanners.ArtifactFile, Path: "/usr/bin/ls"}, "\x7fELF\x00"},
	}
	for _, tc := range []struct {
		name string
		arts []artifactData
		env  *Declared
		want []Verdict // per pool
		fs   []string  // rule path:line
	}{
		{"image config and compat library", image, nil, []Verdict{Incompatible, Compatible}, []string{RuleIncompatible + " config:0"}},
		{"files in any order", []artifactData{image[2], image[1], image[0]}, nil, []Verdict{Incompatible, Compatible}, []string{RuleIncompatible + " config:0"}},
		{"requirements file", []artifactData{{scanners.Artifact{Kind: scanners.ArtifactFile, Path: "requirements.txt"}, "numpy==2.0\ntorch==2.9.0+cu130\n"}}, nil,
			[]Verdict{Incompatible, Incompatible}, []string{RuleIncompatible + " requirements.txt:2", RuleIncompatible + " requirements.txt:2"}},
		{"--env merged into every target", []artifactData{{scanners.Artifact{Kind: scanners.ArtifactFile, Path: "requirements.txt"}, "torch==2.4.0+cu124\n"}},
			func() *Declared { d := ExtractEnv([]string{"TORCH_CUDA_ARCH_LIST=7.5"}, "--env"); return &d }(),
			[]Verdict{Incompatible, Incompatible}, []string{RuleArchUnsupported + " requirements.txt:1", RuleArchUnsupported + " requirements.txt:1"}},
		{"nothing declared", []artifactData{image[2]}, nil, []Verdict{Unknown, Unknown}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.PerTarget(tc.env)
			fs := finishTarget(t, c, "tgt", tc.arts...)
			var got []string
			for _, f := range fs {
				got = append(got, f.RuleID+" "+f.Path+":"+itoa(f.Line))
				if f.Target != "tgt" || !strings.Contains(f.Message, "Fix:") {
					t.Errorf("finding %+v", f)
				}
			}
			if !slices.Equal(got, tc.fs) {
				t.Errorf("findings %q, want %q", got, tc.fs)
			}
			vs := c.Verdicts()
			if len(vs) != 1 || vs[0].Target != "tgt" || len(vs[0].Evaluations) != len(tc.want) {
				t.Fatalf("verdicts %+v", vs)
			}
			for i, ev := range vs[0].Evaluations {
				if ev.Verdict != tc.want[i] || len(vs[0].Findings[i]) != len(ev.Problems) {
					t.Errorf("pool %s: %s with %d findings for %d problems, want %s\n%s", ev.Host, ev.Verdict, len(vs[0].Findings[i]), len(ev.Problems), tc.want[i], strings.Join(ev.Reasons, "\n"))
				}
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestTargetCheckInlineIgnore: an inline mlwarden:ignore comment on the
// declaring line suppresses the finding made at FinishTarget, as the
// dispatcher's inline suppression does for findings made while scanning.
func TestTargetCheckInlineIgnore(t *testing.T) {
	s, err := New(WithDriver("470.82.01"), WithGPUs(GPU{ComputeCapability: "8.0", Brand: "tesla"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, req, want string
	}{
		{"comment for the rule", "torch==2.4.0+cu121  # mlwarden:ignore cuda/incompatible\n", "inline mlwarden:ignore comment"},
		{"comment for every rule", "torch==2.4.0+cu121  # mlwarden:ignore\n", "inline mlwarden:ignore comment"},
		{"comment for another rule", "torch==2.4.0+cu121  # mlwarden:ignore pins/pip-unpinned\n", ""},
		{"comment on another line", "# mlwarden:ignore cuda/incompatible\ntorch==2.4.0+cu121\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := finishTarget(t, s.PerTarget(nil), "t", artifactData{scanners.Artifact{Kind: scanners.ArtifactFile, Path: "requirements.txt"}, tc.req})
			if len(fs) != 1 || fs[0].Suppressed != tc.want {
				t.Errorf("findings %+v, want one suppressed %q", fs, tc.want)
			}
		})
	}
}

// TestTargetCheckState: what an artifact gave survives the cache's round
// trip (KeepState's encoding, RestoreState): a replayed image config and
// compat library decide as scanned ones do.
func TestTargetCheckState(t *testing.T) {
	s, err := New(WithPool("gaming", host("535.104.05", "8.9:geforce")), WithPool("dc", host("535.104.05", "9.0:nvidia")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	arts := []artifactData{
		{scanners.Artifact{Kind: scanners.ArtifactImageConfig, Path: "config", TargetKind: scanners.KindImage}, `{"config":{"Env":["CUDA_VERSION=13.0.2","NVIDIA_REQUIRE_CUDA=` + req130 + `"]}}`},
		{scanners.Artifact{Kind: scanners.ArtifactFile, Path: "/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", Layer: "sha256:1", LayerIndex: 1}, "\x7fELF\x00"},
		{scanners.Artifact{Kind: scanners.ArtifactFile, Path: "requirements.txt"}, "torch==2.9.0+cu130  # mlwarden:ignore cuda/incompatible\n"},
	}
	cold := s.PerTarget(nil)
	coldFs := finishTarget(t, cold, "img", arts...)
	warm := s.PerTarget(nil)
	for _, x := range arts {
		a := x.a
		a.Target = "img"
		head := []byte(x.data)
		d, err := Extract(&a, scanners.MemContent(head))
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(keepPart(part{a: scanners.Keep(a), d: d, inline: inlineIgnores(&a, scanners.MemContent(head), d)}))
		if err != nil {
			t.Fatal(err)
		}
		if err := warm.RestoreState(ctx, "img", data); err != nil {
			t.Fatal(err)
		}
	}
	warmFs, err := warm.FinishTarget(ctx, scanners.Target{Name: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if len(coldFs) == 0 || !slices.EqualFunc(coldFs, warmFs, func(a, b scanners.Finding) bool {
		return a.RuleID == b.RuleID && a.Path == b.Path && a.Line == b.Line && a.Message == b.Message && a.Suppressed == b.Suppressed && a.Layer == b.Layer
	}) {
		t.Errorf("cold %+v\nwarm %+v", coldFs, warmFs)
	}
	cv, wv := cold.Verdicts()[0], warm.Verdicts()[0]
	for i := range cv.Evaluations {
		if cv.Evaluations[i].Verdict != wv.Evaluations[i].Verdict || !slices.Equal(cv.Evaluations[i].Reasons, wv.Evaluations[i].Reasons) {
			t.Errorf("pool %s: cold %s, warm %s", cv.Evaluations[i].Host, cv.Evaluations[i].Verdict, wv.Evaluations[i].Verdict)
		}
	}
	if err := warm.RestoreState(ctx, "img", []byte("{not json")); err == nil {
		t.Error("bad state accepted")
	}
}
