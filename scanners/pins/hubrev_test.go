package pins

import (
	"context"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestHubRevisionBranch(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name   string
		target scanners.Target
		want   string // "" for no finding, else a word of the message
	}{
		{"branch", scanners.Target{Name: "hf:org/model@main", Kind: scanners.KindHub, Digest: commit}, `revision "main"`},
		{"no revision is main", scanners.Target{Name: "hf:org/model", Kind: scanners.KindHub, Digest: commit}, `revision "main"`},
		{"tag", scanners.Target{Name: "hf:datasets/org/data@v1.0", Kind: scanners.KindHub, Digest: commit}, "hf:datasets/org/data@" + commit},
		{"commit", scanners.Target{Name: "hf:org/model@" + commit, Kind: scanners.KindHub, Digest: commit}, ""},
		{"not resolved", scanners.Target{Name: "hf:org/model@main", Kind: scanners.KindHub}, ""},
		{"a directory", scanners.Target{Name: "models/org@main", Kind: scanners.KindDir, Digest: commit}, ""},
	}
	s := New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, err := s.FinishTarget(context.Background(), c.target)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].RuleID != "pins/hub-revision-branch" || fs[0].Target != c.target.Name || !strings.Contains(fs[0].Message, c.want) || !strings.Contains(fs[0].Message, commit) {
				t.Fatalf("want one pins/hub-revision-branch finding naming %q and the commit, got %+v", c.want, fs)
			}
		})
	}
}
