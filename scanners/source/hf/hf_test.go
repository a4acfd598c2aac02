//go:build !mlwarden_sbatch

package hf_test

import (
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
)

func TestParseRef(t *testing.T) {
	cases := []struct {
		in   string
		want hf.Ref
		err  string
	}{
		{in: "org/model", want: hf.Ref{Type: "model", ID: "org/model"}},
		{in: "org/model@main", want: hf.Ref{Type: "model", ID: "org/model", Revision: "main"}},
		{in: "gpt2", want: hf.Ref{Type: "model", ID: "gpt2"}},
		{in: "models/org/m", want: hf.Ref{Type: "model", ID: "org/m"}},
		{in: "datasets/org/data@refs/convert/parquet", want: hf.Ref{Type: "dataset", ID: "org/data", Revision: "refs/convert/parquet"}},
		{in: "spaces/org/app@v1.0", want: hf.Ref{Type: "space", ID: "org/app", Revision: "v1.0"}},
		{in: "//org/model", want: hf.Ref{Type: "model", ID: "org/model"}},
		{in: "org/Model-1.5_b", want: hf.Ref{Type: "model", ID: "org/Model-1.5_b"}},
		{in: "", err: "want"},
		{in: "org/model@", err: "nothing after @"},
		{in: "a/b/c", err: "want"},
		{in: "org/..", err: "not a valid repository name"},
		{in: "org--x/model", err: "not a valid repository name"},
		{in: "org/mo del", err: "not a valid repository name"},
		{in: "org/model@../main", err: "not a revision"},
		{in: "org/model@main branch", err: "not a revision"},
	}
	for _, c := range cases {
		got, err := hf.ParseRef(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseRef(%q) = %+v, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if err == nil {
			// The name round-trips.
			if again, err := hf.ParseRef(strings.TrimPrefix(got.String(), "hf:")); err != nil || again != got {
				t.Errorf("ParseRef(%q).String() = %q does not parse back: %+v, %v", c.in, got.String(), again, err)
			}
		}
	}
}

// TestSameFindingsAsDisk is the "done when": hf:ORG/NAME@COMMIT
// reports what the same files report as a directory — every check, same
// rules, paths, lines, messages and fingerprints — without downloading
// the repository.
func TestSameFindingsAsDisk(t *testing.T) {
	dir := modelRepo(t)
	srv, commit := serve(t, "org/custom", dir)
	name := "hf:org/custom@" + commit
	res := run(t, hubOptions(srv), nil, name, "dir:"+dir)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	disk := findings(res, dir)
	hub := findings(res, name)
	if len(disk) < 20 {
		t.Fatalf("only %d findings on disk: the fixture tree is not what it was", len(disk))
	}
	sameFindings(t, name, hub, disk, "")
	tg := target(res, name)
	if tg.Kind != scanners.KindHub || tg.Digest != commit {
		t.Errorf("target %+v, want kind hub and digest %s", tg, commit)
	}
	st := srv.Stats()
	var total int64
	for _, f := range mustFiles(t, dir) {
		total += f
	}
	t.Logf("downloaded %d of %d bytes (%.2f%%) in %d requests; notes: %q", st.FileBytes, total, 100*float64(st.FileBytes)/float64(total), st.Requests, tg.Notes)
	if st.FileBytes >= total/2 {
		t.Errorf("downloaded %d bytes of a %d-byte repository", st.FileBytes, total)
	}
	if !strings.Contains(strings.Join(tg.Notes, "\n"), "checked against a manifest or signature by the sha256 the Hub's tree lists") {
		t.Errorf("no note of the LFS digest taken from the tree: %q", tg.Notes)
	}
	if code := scan.ExitCode(res, nil); code != scan.ExitOK {
		t.Errorf("exit code %d with no --fail-on", code)
	}
}
