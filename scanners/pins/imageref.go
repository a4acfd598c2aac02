package pins

import (
	"fmt"
	"strings"
)

// imageVerdict is what the check thinks of one image reference.
type imageVerdict int

const (
	imagePinned   imageVerdict = iota // by digest, or a local file
	imageTag                          // by a tag other than latest
	imageLatest                       // :latest or no tag
	imageVariable                     // built from a variable we could not resolve
)

// isHex reports whether s is n lower- or upper-case hex digits (any length
// when n is 0).
func isHex(s string, n int) bool {
	if s == "" || (n > 0 && len(s) != n) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// isCommit reports whether s is a full git commit hash (SHA-1 or SHA-256).
func isCommit(s string) bool { return isHex(s, 40) || isHex(s, 64) }

// hasDigest reports whether ref names a content digest ("@sha256:<hex>").
func hasDigest(ref string) bool {
	i := strings.LastIndex(ref, "@")
	if i < 0 {
		return false
	}
	alg, hex, ok := strings.Cut(ref[i+1:], ":")
	return ok && (alg == "sha256" && isHex(hex, 64) || alg == "sha512" && isHex(hex, 128))
}

// splitTag returns the repository and the tag of a reference without digest
// ("" when there is no tag).
func splitTag(ref string) (repo, tag string) {
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon > slash {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

// dockerImage judges a Docker/OCI image reference as written in a
// Dockerfile FROM, a manifest image: field or a docker:// URL. dyn says part
// of it came from a variable that could not be resolved.
func dockerImage(ref string, dyn bool) imageVerdict {
	ref = strings.TrimSpace(ref)
	switch {
	case hasDigest(ref) || strings.Contains(ref, "@sha256:${") || strings.Contains(ref, "@sha256:$"):
		// name@sha256:${DIGEST}: pinned by a digest the caller passes.
		return imagePinned
	case dyn:
		return imageVariable
	}
	_, tag := splitTag(ref)
	if tag == "" || tag == "latest" {
		return imageLatest
	}
	return imageTag
}

// pyxisImage converts an Enroot/Pyxis image reference,
// [USER@][REGISTRY#]IMAGE[:TAG|@DIGEST], to Docker syntax and reports
// whether it is a local file (a squashfs image), which is fine.
func pyxisImage(ref string) (docker string, local bool) {
	ref = strings.TrimSpace(ref)
	ref = strings.TrimPrefix(ref, "docker://")
	if ref == "" || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "./") || strings.HasPrefix(ref, "../") ||
		strings.HasPrefix(ref, "~") || strings.HasSuffix(ref, ".sqsh") || strings.HasSuffix(ref, ".squashfs") ||
		strings.HasPrefix(ref, "dockerd://") || strings.HasPrefix(ref, "podman://") {
		return ref, true
	}
	if reg, img, ok := strings.Cut(ref, "#"); ok {
		if at := strings.LastIndex(reg, "@"); at >= 0 {
			reg = reg[at+1:] // USER@REGISTRY
		}
		ref = reg + "/" + img
	} else if at := strings.Index(ref, "@"); at >= 0 && !strings.HasPrefix(ref[at+1:], "sha256:") && !strings.Contains(ref[:at], "/") {
		ref = ref[at+1:] // USER@IMAGE
	}
	// The older Enroot form IMAGE:sha256:<hex> names a digest too.
	if i := strings.Index(ref, ":sha256:"); i >= 0 && !strings.Contains(ref, "@") && isHex(ref[i+len(":sha256:"):], 64) {
		ref = ref[:i] + "@" + ref[i+1:]
	}
	return ref, false
}

// pinHint says how to pin ref.
func pinHint(ref string) string {
	repo, tag := splitTag(ref)
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if tag == "" || tag == "latest" {
		return fmt.Sprintf("pin a release by digest: %s:<version>@sha256:<digest> (mlwarden pin FILE resolves and rewrites it)", repo)
	}
	return fmt.Sprintf("pin it by digest: %s:%s@sha256:<digest> (mlwarden pin FILE resolves and rewrites it)", repo, tag)
}

// imageFinding reports an image reference that is not pinned. what says
// where it is used ("FROM", "container image", ...).
func (r *rep) image(line int, what, ref string, dyn bool) {
	if strings.Contains(ref, "{{") || strings.Contains(ref, "$(") {
		dyn = true // a template or CI expression: filled in elsewhere
	}
	switch dockerImage(ref, dyn) {
	case imagePinned:
	case imageVariable:
		r.add(ruleImageVariable, line, ref, fmt.Sprintf("%s %q is built from a variable with no pinned value in this file, so the caller decides what runs; give it a default pinned by digest (name:tag@sha256:<digest>)", what, ref))
	case imageLatest:
		r.add(ruleImageLatest, line, ref, fmt.Sprintf("%s %q has no tag or uses :latest, so every pull may get a different image; %s", what, ref, pinHint(ref)))
	case imageTag:
		r.add(ruleImageNotDigest, line, ref, fmt.Sprintf("%s %q is referenced by tag, not digest: whoever can push the tag decides what runs; %s", what, ref, pinHint(ref)))
	}
}

// imageNoTag reports an image reference whose consumer takes a digest in
// place of the tag (Enroot/Pyxis, written in its own syntax when pyxis, and
// Apptainer): judged as the Docker reference it names, with the fix in the
// form the consumer accepts.
func (r *rep) imageNoTag(line int, what, written string, dyn, pyxis bool) {
	ref := written
	if pyxis {
		var local bool
		if ref, local = pyxisImage(written); local {
			return
		}
	}
	hint := fmt.Sprintf("pin it by digest in place of the tag: %s@sha256:<digest> (mlwarden pin FILE resolves and rewrites it)", dropTag(written))
	switch dockerImage(ref, dyn) {
	case imageVariable:
		r.add(ruleImageVariable, line, written, fmt.Sprintf("%s %q is built from a variable with no pinned value in this file, so the caller decides what runs; give it a value pinned by digest (%s@sha256:<digest>)", what, written, dropTag(written)))
	case imageLatest:
		r.add(ruleImageLatest, line, written, fmt.Sprintf("%s %q has no tag or uses :latest, so every job may get a different image; %s", what, written, hint))
	case imageTag:
		r.add(ruleImageNotDigest, line, written, fmt.Sprintf("%s %q is referenced by tag, not digest: whoever can push the tag decides what runs on your nodes; %s", what, written, hint))
	}
}

// dropTag removes ":tag" from a reference (Docker or Pyxis syntax).
func dropTag(ref string) string {
	slash := strings.LastIndexAny(ref, "/#")
	if c := strings.LastIndex(ref, ":"); c > slash {
		return ref[:c]
	}
	return ref
}
