package pins

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// scanText runs the check on one in-memory file of a script target (no
// neighbours) and returns "rule@line" for each finding, sorted.
func scanText(t testing.TB, p, content string, opts ...Option) ([]string, []scanners.Finding) {
	t.Helper()
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", TargetKind: scanners.KindScript, Path: p}
	fs, err := scanners.ScanBytes(context.Background(), New(opts...), a, []byte(content))
	if err != nil {
		t.Fatalf("scan %s: %v", p, err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s@%d", strings.TrimPrefix(f.RuleID, "pins/"), f.Line))
	}
	slices.Sort(got)
	return got, fs
}

func checkCases(t *testing.T, cases []tcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			skipDockerfileInHook(t, c.path, c.in)
			got, fs := scanText(t, c.path, c.in)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				var msgs []string
				for _, f := range fs {
					msgs = append(msgs, fmt.Sprintf("  %s@%d: %s", f.RuleID, f.Line, f.Message))
				}
				t.Errorf("got %v, want %v\n%s", got, want, strings.Join(msgs, "\n"))
			}
			for _, f := range fs {
				if f.Check != scanners.CheckPins || f.Message == "" {
					t.Errorf("bad finding %+v", f)
				}
			}
		})
	}
}

type tcase struct {
	name, path, in string
	want           []string
}

func checkImageCfg(t *testing.T, cfg string) {
	t.Helper()
	a := &scanners.Artifact{Kind: scanners.ArtifactImageConfig, Target: "img", TargetKind: scanners.KindImage, Path: "config.json"}
	fs, err := scanners.ScanBytes(context.Background(), New(), a, []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s@%d", f.RuleID, f.Line))
	}
	slices.Sort(got)
	want := []string{"pins/image-not-digest@0", "pins/pip-unpinned@0"}
	if !slices.Equal(got, want) {
		t.Errorf("image config: got %v, want %v (%v)", got, want, fs)
	}
	for _, f := range fs {
		if f.RuleID == "pins/pip-unpinned" && !strings.Contains(f.Message, "image history entry 1") {
			t.Errorf("history finding does not say which entry: %s", f.Message)
		}
	}
}

// skipDockerfileInHook skips a case that is a Dockerfile on the hook's
// build, which reports every Dockerfile as not read (TestHookDockerfile).
func skipDockerfileInHook(t *testing.T, p, content string) {
	t.Helper()
	head := []byte(content)[:min(len(content), scanners.HeadSize)]
	if hookBuild && classify(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: p}, head) == kindDockerfile {
		t.Skip("mlwarden-sbatch's build reads no Dockerfile")
	}
}
