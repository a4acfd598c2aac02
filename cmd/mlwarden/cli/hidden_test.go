//go:build !mlwarden_sbatch

package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

// TestScanHiddenBesideImages: `mlwarden scan` of a directory holding an OCI
// layout, a docker save archive or a Hub cache reports what is hidden
// beside the image or the snapshots (issue 37, item 20); before, each of
// these exited 0 with no finding.
func TestScanHiddenBesideImages(t *testing.T) {
	token := hostile.Token(2037)
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tree := filepath.Join(root, "tree")
	_, err := hostile.OCILayoutBeside(filepath.Join(tree, "oci"), token)
	must(err)
	layoutOnly := filepath.Join(root, "layout")
	_, err = hostile.OCILayoutBeside(layoutOnly, token)
	must(err)
	archives := filepath.Join(root, "archives")
	must(os.MkdirAll(archives, 0o755))
	_, err = hostile.DockerArchiveBeside(filepath.Join(archives, "app.tar"), token)
	must(err)
	repo, err := hostile.HubCacheBeside(filepath.Join(root, "hub"), token)
	must(err)

	for _, tc := range []struct {
		target, path, rule string
	}{
		{tree, "oci/evil.pkl", "models/pickle-dangerous-global"},
		{tree, "oci/sub/creds.env", "secrets/huggingface-token"},
		{layoutOnly, "evil.pkl", "models/pickle-dangerous-global"},
		{"oci:" + layoutOnly, "sub/creds.env", "secrets/huggingface-token"},
		{archives, "app.tar!evil.pkl", "models/pickle-dangerous-global"},
		{archives, "app.tar!creds.env", "secrets/huggingface-token"},
		{repo, "blobs/unlinked", "models/pickle-dangerous-global"},
		{repo, "evil.pkl", "models/pickle-dangerous-global"},
		{filepath.Dir(repo), ".locks/models--org--beside/x.lock", "secrets/huggingface-token"},
	} {
		t.Run(tc.target+" "+tc.path, func(t *testing.T) {
			code, res := scanJSON(t, "--no-cache", tc.target)
			if code != ExitFindings || len(res.Errors) > 0 {
				t.Errorf("exit %d, want 1; errors %v", code, res.Errors)
			}
			for _, f := range res.Findings {
				if f.Path == tc.path && f.RuleID == tc.rule {
					return
				}
			}
			var got []string
			for _, f := range res.Findings {
				got = append(got, f.Path+" "+f.RuleID)
			}
			t.Errorf("no %s at %s; findings: %v", tc.rule, tc.path, got)
		})
	}
}
