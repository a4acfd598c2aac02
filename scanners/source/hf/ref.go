// Package hf is the Hugging Face Hub source: hf:ORG/NAME[@REVISION]
// targets (models; datasets/ and spaces/ too) read through the Hub's
// documented HTTP API — the revision's commit, the recursive tree with
// sizes and LFS digests, and ranged reads of /resolve/ — so that a check
// reads a remote file as it reads one on disk and only those bytes are
// downloaded; and local Hub caches (HF_HUB_CACHE), scanned as the
// repository at the commit of each snapshot.
package hf

import (
	"fmt"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// Repository types, as the Hub's API names them in /api/{type}s/.
const (
	TypeModel   = "model"
	TypeDataset = "dataset"
	TypeSpace   = "space"
)

// Scheme is the target prefix: hf:ORG/NAME[@REVISION].
const Scheme = "hf"

// DefaultRevision is what a target without @REVISION reads: the default
// branch, as the Hub's clients do.
const DefaultRevision = "main"

// Ref is a repository on the Hub and a revision of it.
type Ref struct {
	// Type is TypeModel, TypeDataset or TypeSpace.
	Type string
	// ID is ORG/NAME (or NAME for the few repositories without an owner).
	ID string
	// Revision is a branch, tag or commit; "" means DefaultRevision.
	Revision string
}

// repoPart is one component of a repository id, as the Hub accepts them.
var repoPart = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

// ParseRef reads what follows "hf:": [models/|datasets/|spaces/]ORG/NAME
// with an optional @REVISION (a branch, tag or commit; it may hold "/", as
// refs/pr/1 does). A leading "//" (hf://ORG/NAME) is accepted too.
func ParseRef(s string) (Ref, error) {
	orig := s
	s = strings.TrimPrefix(s, "//")
	var r Ref
	id, rev, hasRev := strings.Cut(s, "@")
	if hasRev {
		if rev == "" {
			return r, fmt.Errorf("hf:%s: nothing after @ (a branch, tag or commit)", orig)
		}
		if strings.ContainsAny(rev, " \t\r\n\\") || strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") {
			return r, fmt.Errorf("hf:%s: %q is not a revision (a branch, tag or commit)", orig, rev)
		}
		r.Revision = rev
	}
	r.Type = TypeModel
	for _, t := range []string{TypeModel, TypeDataset, TypeSpace} {
		if rest, ok := strings.CutPrefix(id, t+"s/"); ok {
			r.Type, id = t, rest
			break
		}
	}
	parts := strings.Split(id, "/")
	if len(parts) > 2 || id == "" {
		return r, fmt.Errorf("hf:%s: want [datasets/|spaces/]ORG/NAME[@REVISION]", orig)
	}
	for _, p := range parts {
		if !repoPart.MatchString(p) || strings.Contains(p, "--") || strings.Contains(p, "..") || strings.HasSuffix(p, ".") {
			return r, fmt.Errorf("hf:%s: %q is not a valid repository name (letters, digits, '-', '_', '.'; no '--' or '..')", orig, p)
		}
	}
	r.ID = id
	return r, nil
}

// Rev is the revision to ask for: Revision, or DefaultRevision.
func (r Ref) Rev() string {
	if r.Revision == "" {
		return DefaultRevision
	}
	return r.Revision
}

// String is the target as written: hf:[datasets/|spaces/]ID[@REVISION].
func (r Ref) String() string {
	s := Scheme + ":" + r.prefix() + r.ID
	if r.Revision != "" {
		s += "@" + r.Revision
	}
	return s
}

// prefix is what the Hub's URLs put before a non-model repository's id.
func (r Ref) prefix() string {
	if r.Type == TypeModel || r.Type == "" {
		return ""
	}
	return r.Type + "s/"
}

// apiType is the type's segment in /api/{type}s/.
func (r Ref) apiType() string {
	if r.Type == "" {
		return TypeModel + "s"
	}
	return r.Type + "s"
}

// IsCommit reports whether rev is a full commit id (40 hexadecimal digits).
func IsCommit(rev string) bool {
	if len(rev) != 40 {
		return false
	}
	for _, c := range rev {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
