package deploy_test

import (
	"context"
	"testing"

	"github.com/mlwarden/mlwarden/scanners/scan"
)

// TestNothingLatest: no manifest, values file, kustomization or script in
// deploy/ names an image by :latest or without a tag, as mlwarden's pins
// check judges it (image-by-tag findings, medium, remain until a release
// is published and its digest pinned).
func TestNothingLatest(t *testing.T) {
	s, err := scan.New(scan.Options{Checks: []string{"pins"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), scan.Target{Ref: "."}, scan.Target{Ref: "../Dockerfile"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Errors {
		t.Errorf("%s: %s", e.Path, e.Message)
	}
	for _, f := range res.Findings {
		if f.RuleID == "pins/image-latest" || f.RuleID == "pins/image-variable" {
			t.Errorf("%s:%d: %s: %s", f.Path, f.Line, f.RuleID, f.Message)
		}
	}
}
