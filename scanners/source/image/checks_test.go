//go:build !mlwarden_sbatch

package image_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// The fixture image through the real checks: the secret in a deleted file,
// the ENV token, the pickle in a replaced file and the Jupyter CMD are found,
// each with its layer and note.
func TestImageRealChecks(t *testing.T) {
	img, secret, env := image.ImgTestImage(t, runtime.GOARCH)
	dir := image.ImgWriteOCI(t, img, nil)
	scs, err := catalog.New(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := image.Open(context.Background(), image.SchemeOCI, dir, image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := scanners.NewDispatcher(scs).Run(context.Background(), src)
	for _, e := range res.Errors {
		t.Errorf("error: %v", e)
	}
	has := func(path, rulePrefix, inMessage string) bool {
		for _, fd := range res.Findings {
			if fd.Path == path && strings.HasPrefix(fd.RuleID, rulePrefix) && strings.Contains(fd.Message, inMessage) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct{ path, rule, msg string }{
		{"/app/.env", "secrets/", "deleted in layer 2 — still present in the image"},
		{image.ConfigPath, "secrets/", ""},
		{"/app/model.pkl", "models/", "replaced in layer 3"},
		{image.ConfigPath, "misconfig/", ""},
	} {
		if !has(tc.path, tc.rule, tc.msg) {
			t.Errorf("no %s finding in %s (with %q)", tc.rule, tc.path, tc.msg)
		}
	}
	for _, fd := range res.Findings {
		if strings.Contains(fd.Message, secret) || strings.Contains(fd.Evidence, secret) || strings.Contains(fd.Message, env) || strings.Contains(fd.Evidence, env) {
			t.Errorf("a secret's value is shown: %+v", fd)
		}
		if fd.Path != image.ConfigPath && fd.Layer == "" {
			t.Errorf("finding without a layer: %+v", fd)
		}
	}
	if t.Failed() {
		for _, fd := range res.Findings {
			t.Logf("%s %s:%d %s", fd.RuleID, fd.Path, fd.Line, fd.Message)
		}
	}
}
