package scan

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// --new-only REF (docs/design/scopes.md): each target is scanned again as
// it was at REF, with the same settings — a git: target or a directory in
// a work tree at the commit REF, read from git's object store; an image or
// hf: target at the reference REF names — and a finding of the target
// whose scope key is among the base's is left out, counted in
// Summary.PresentBefore and in a note of the target.
//
// The scope key is the fingerprint (scanners.ComputeFingerprint) of the
// finding without what a base and a change differ in while the finding
// stays the same: the commit that added a line and the note its artifact
// carries ("added in commit …", "deleted in layer 4 …"), the image layer.
// The line never was in it. So a secret that moved within its file, or
// that a branch removed from the tree but history still holds, is present
// before; one that moved to another file is new. Repeats count: a second
// copy of a finding in a file where the base had one is new.

// newOnly removes from res the findings of each target that its base scan
// also found.
func (s *Scanner) newOnly(ctx context.Context, res *scanners.Result, targets []Target, names []string) {
	kinds := map[string]scanners.TargetKind{}
	for _, t := range res.Targets {
		kinds[t.Name] = t.Kind
	}
	before := res.Summary.PresentBefore
	for i, t := range targets {
		name := names[i]
		if name == "" || t.Script != nil || ctx.Err() != nil {
			continue
		}
		bt, err := baseTarget(t, kinds[name], s.o.NewOnly)
		if err != nil {
			res.Errors = append(res.Errors, scanners.Error{Target: name, Message: err.Error()})
			continue
		}
		base, _ := s.run(ctx, []Target{bt})
		for _, e := range base.Errors {
			// What the base could not read is not known to be present
			// before: the comparison is incomplete.
			res.Errors = append(res.Errors, scanners.Error{Target: name, Path: e.Path,
				Message: fmt.Sprintf("--new-only %s: the base scan: %s", s.o.NewOnly, e.Message)})
		}
		seen := map[string]int{}
		for _, k := range scopeKeys(base.Findings, s.o.Workers) {
			seen[k]++
		}
		var mine []int
		var own []scanners.Finding
		for j, f := range res.Findings {
			if f.Target == name {
				mine = append(mine, j)
				own = append(own, f)
			}
		}
		drop := map[int]bool{}
		for j, k := range scopeKeys(own, s.o.Workers) {
			if seen[k] > 0 {
				seen[k]--
				drop[mine[j]] = true
			}
		}
		kept := res.Findings[:0]
		for j, f := range res.Findings {
			if !drop[j] {
				kept = append(kept, f)
			}
		}
		res.Findings = kept
		before += len(drop)
		s.noteNewOnly(res, name, base.Result, len(drop))
	}
	hidden := res.Summary.Hidden
	res.Summary = scanners.Summarize(res.Findings)
	res.Summary.Hidden, res.Summary.PresentBefore = hidden, before
}

// noteNewOnly names the comparison in target name's notes and VCS.
func (s *Scanner) noteNewOnly(res *scanners.Result, name string, base *scanners.Result, n int) {
	var bv *scanners.VCS
	baseName := ""
	if len(base.Targets) > 0 {
		bv, baseName = base.Targets[0].VCS, base.Targets[0].Name
	}
	for i := range res.Targets {
		t := &res.Targets[i]
		if t.Name != name {
			continue
		}
		at := s.o.NewOnly
		if bv != nil && bv.Revision != "" {
			at = fmt.Sprintf("%s (%s)", s.o.NewOnly, bv.Revision)
		} else if baseName != "" && baseName != name {
			at = baseName
		}
		t.Notes = append(t.Notes, fmt.Sprintf("scope: --new-only %s: only findings not present at %s are reported; %d finding(s) present there were left out", s.o.NewOnly, at, n))
		if bv != nil {
			v := scanners.VCS{RepositoryURI: bv.RepositoryURI, Branch: bv.Branch}
			if t.VCS != nil {
				v = *t.VCS
			}
			scope := "new-only " + s.o.NewOnly
			if bv.Revision != "" {
				scope = "new-only " + bv.Revision
			}
			if v.Scope != "" {
				scope = v.Scope + ", " + scope
			}
			v.Scope = scope
			t.VCS = &v
		}
	}
}

// baseTarget is the target that --new-only ref compares t against.
func baseTarget(t Target, kind scanners.TargetKind, ref string) (Target, error) {
	switch kind {
	case scanners.KindRepo, scanners.KindDir:
		return Target{Ref: t.Ref, base: ref}, nil
	case scanners.KindImage, scanners.KindHub:
		b := Target{Ref: otherReference(t.Ref, ref), Auth: t.Auth, Insecure: t.Insecure}
		return b, nil
	}
	return Target{}, fmt.Errorf("--new-only %s: a %s target has no earlier state to compare with (use a directory in a git work tree, git:, an image or hf:)", ref, kind)
}

// otherReference is target at another reference: ref itself when it is a
// whole target (scheme:…), else target with its tag, digest or revision
// replaced by ref (registry:org/img:1.4 and 1.3 → registry:org/img:1.3;
// sha256:… a digest; hf:org/model@main and v1 → hf:org/model@v1).
func otherReference(target, ref string) string {
	if scheme, _, ok := strings.Cut(ref, ":"); ok && wholeTarget.MatchString(scheme) {
		return ref
	}
	if rest, ok := strings.CutPrefix(target, "hf:"); ok {
		repo, _, _ := strings.Cut(rest, "@")
		return "hf:" + repo + "@" + ref
	}
	scheme := ""
	repo := target
	if rest, ok := strings.CutPrefix(target, "registry:"); ok {
		scheme, repo = "registry:", rest
	}
	if i := strings.LastIndexByte(repo, '@'); i >= 0 {
		repo = repo[:i]
	} else if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i] // a tag, not a registry's port
	}
	if strings.HasPrefix(ref, "sha256:") {
		return scheme + repo + "@" + ref
	}
	return scheme + repo + ":" + ref
}

// wholeTarget matches the schemes of a reference that names a whole target.
var wholeTarget = regexp.MustCompile(`^(registry|oci|docker-archive|hf|git|dir)$`)

// artifactNote is the note At appends to a finding's message for its
// artifact: the commit that added a history line, an image layer that
// deleted or replaced a file.
var artifactNote = regexp.MustCompile(` \((?:added in commit [0-9a-f]+|deleted in layer \d+|replaced in layer \d+)[^()]*\)$`)

// scopeKeys are the findings' scope keys (see above), each distinct
// secret's key derived once.
func scopeKeys(fs []scanners.Finding, workers int) []string {
	cp := make([]scanners.Finding, len(fs))
	for i, f := range fs {
		f.Target, f.Commit, f.Layer, f.Line, f.Fingerprint, f.Suppressed = "", "", "", 0, "", ""
		f.Message = artifactNote.ReplaceAllString(f.Message, "")
		cp[i] = f
	}
	scanners.FingerprintAll(cp, workers)
	out := make([]string, len(cp))
	for i := range cp {
		out[i] = cp[i].Fingerprint
	}
	return out
}
