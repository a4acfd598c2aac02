package pins

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// reqVerdict is what the check thinks of one Python requirement.
type reqVerdict int

const (
	reqPinned      reqVerdict = iota // ==x.y.z, ===x, a local path, a hashed URL
	reqUnpinned                      // a bare name or a range
	reqVCSUnpinned                   // git+URL without @<commit>
	reqInvalid                       // not a requirement (an option, garbage)
)

var vcsPrefixes = []string{"git+", "hg+", "svn+", "bzr+"}

func isVCS(s string) bool {
	for _, p := range vcsPrefixes {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// judgeReq reads one PEP 508 requirement (or a pip command-line argument)
// and returns its verdict, its name and, for VCS URLs, the ref given.
func judgeReq(spec string) (v reqVerdict, name, ref string) {
	s := strings.TrimSpace(spec)
	if s == "" || strings.HasPrefix(s, "-") {
		return reqInvalid, "", ""
	}
	if i := strings.Index(s, ";"); i >= 0 { // environment markers
		s = strings.TrimSpace(s[:i])
	}
	if isVCS(s) {
		u := s
		if _, after, ok := strings.Cut(s, " @ "); ok {
			u = strings.TrimSpace(after)
		} else if _, after, ok := strings.Cut(s, "@git+"); ok {
			u = "git+" + after
		}
		u, _, _ = strings.Cut(u, "#") // #egg=, #subdirectory=
		_, rest, _ := strings.Cut(u, "://")
		if i := strings.Index(rest, "/"); i >= 0 { // drop user@host
			rest = rest[i+1:]
		} else {
			rest = ""
		}
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			ref = rest[i+1:]
		}
		// Only git and Mercurial name a revision by its hash; a Subversion
		// or Bazaar ref is a number or a name.
		if isCommit(ref) && !strings.Contains(s, "svn+") && !strings.Contains(s, "bzr+") {
			return reqPinned, "", ref
		}
		return reqVCSUnpinned, "", ref
	}
	if strings.Contains(s, "://") {
		return reqPinned, "", "" // a direct URL to one file
	}
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "$") ||
		strings.Contains(s, "/") || strings.HasSuffix(s, ".whl") || strings.HasSuffix(s, ".tar.gz") || strings.HasSuffix(s, ".zip") {
		return reqPinned, "", "" // a local path or file
	}
	if _, after, ok := strings.Cut(s, "@"); ok && strings.Contains(after, ":") {
		return reqPinned, "", "" // name @ file:...
	}
	i := strings.IndexAny(s, "=<>!~ [(")
	name = s
	if i >= 0 {
		name = strings.TrimSpace(s[:i])
	}
	if name == "" || !isNameStart(name[0]) {
		return reqInvalid, "", ""
	}
	if i < 0 {
		return reqUnpinned, name, ""
	}
	rest := s[i:]
	if j := strings.Index(rest, "]"); strings.HasPrefix(strings.TrimSpace(rest), "[") && j >= 0 {
		rest = rest[j+1:]
	}
	for _, clause := range strings.Split(rest, ",") {
		c := strings.Trim(strings.TrimSpace(clause), "()")
		switch {
		case strings.HasPrefix(c, "==="):
			return reqPinned, name, ""
		case strings.HasPrefix(c, "==") && !strings.Contains(c, "*"):
			return reqPinned, name, ""
		}
	}
	return reqUnpinned, name, ""
}

func isNameStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// reqLine is one logical line of a requirements file.
type reqLine struct {
	text string
	line int // first physical line
}

// reqLines joins continuation lines and strips comments, keeping the line
// number where each logical line starts.
func reqLines(data []byte) []reqLine {
	var out []reqLine
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimRight(l, "\r")
		if cur.Len() == 0 {
			start = i + 1
		}
		// A comment starts at "#" at the line start or after whitespace.
		if j := strings.Index(l, "#"); j == 0 {
			l = ""
		} else if j := strings.Index(l, " #"); j >= 0 {
			l = l[:j]
		} else if j := strings.Index(l, "\t#"); j >= 0 {
			l = l[:j]
		}
		if strings.HasSuffix(l, `\`) {
			cur.WriteString(strings.TrimSuffix(l, `\`))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(l)
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, reqLine{text: t, line: start})
		}
		cur.Reset()
	}
	if t := strings.TrimSpace(cur.String()); t != "" {
		out = append(out, reqLine{text: t, line: start})
	}
	return out
}

// maxIncludeDepth bounds -r/-c chains.
const maxIncludeDepth = 8

// scanRequirementsFile checks a requirements or constraints file and the
// files it includes with -r/-c when they can be read.
func (s *Scanner) scanRequirementsFile(ctx context.Context, a *scanners.Artifact, data []byte, r *rep) {
	seen := map[string]bool{path.Clean(a.Path): true}
	s.requirements(ctx, a, data, r, a.FS, path.Dir(a.Path), seen, 0)
}

func (s *Scanner) requirements(ctx context.Context, a *scanners.Artifact, data []byte, r *rep, fsys fs.FS, dir string, seen map[string]bool, depth int) {
	lines := reqLines(data)
	hashed := false
	for _, l := range lines {
		if strings.Contains(l.text, "--hash") || strings.Contains(l.text, "--require-hashes") {
			hashed = true
		}
	}
	var noHash []reqLine
	for _, l := range lines {
		if ctx.Err() != nil {
			return
		}
		fields := strings.Fields(l.text)
		first := fields[0]
		name, val, hasVal := strings.Cut(first, "=")
		if !hasVal && len(fields) > 1 {
			val = fields[1]
		}
		switch {
		case name == "--extra-index-url":
			r.add(ruleExtraIndex, l.line, val, fmt.Sprintf("--extra-index-url %s adds a second package index: pip may install a same-named package from whichever index serves the higher version (dependency confusion, as in the 2022 torchtriton incident); use a single --index-url that proxies the public index, or pin every requirement with --hash", val))
		case name == "-r" || name == "--requirement" || name == "-c" || name == "--constraint":
			s.include(ctx, a, r, fsys, dir, val, seen, depth)
		case strings.HasPrefix(first, "-r") && len(first) > 2 && !strings.HasPrefix(first, "--"):
			s.include(ctx, a, r, fsys, dir, first[2:], seen, depth)
		case strings.HasPrefix(first, "-c") && len(first) > 2 && !strings.HasPrefix(first, "--"):
			s.include(ctx, a, r, fsys, dir, first[2:], seen, depth)
		case name == "-e" || name == "--editable":
			if v, _, ref := judgeReq(val); v == reqVCSUnpinned {
				r.add(ruleVCSUnpinned, l.line, val, vcsMessage(val, ref))
			}
		case strings.HasPrefix(first, "-"):
			// -i, --index-url, -f, --trusted-host, --pre, --require-hashes, ...
		default:
			// The requirement is everything before the first option.
			var parts []string
			for _, f := range fields {
				if strings.HasPrefix(f, "--") {
					break
				}
				parts = append(parts, f)
			}
			req := strings.Join(parts, " ")
			v, pkg, ref := judgeReq(req)
			switch v {
			case reqVCSUnpinned:
				r.add(ruleVCSUnpinned, l.line, req, vcsMessage(req, ref))
			case reqUnpinned:
				r.add(rulePipUnpinned, l.line, req, fmt.Sprintf("requirement %q has no exact version, so each install gets whatever the index serves today (a new, yanked or hijacked release); pin it: %s==<version> --hash=sha256:<hash> (pip-compile --generate-hashes or uv pip compile --generate-hashes)", req, pkg))
			case reqPinned:
				if pkg != "" && !strings.Contains(l.text, "--hash") {
					noHash = append(noHash, l)
				}
			}
		}
	}
	if len(noHash) > 0 && !hashed {
		names := make([]string, 0, 3)
		for _, l := range noHash[:min(3, len(noHash))] {
			names = append(names, strings.Fields(l.text)[0])
		}
		more := ""
		if len(noHash) > 3 {
			more = fmt.Sprintf(" and %d more", len(noHash)-3)
		}
		r.add(rulePipNoHash, noHash[0].line, strings.Join(names, ", "), fmt.Sprintf("%s pinned by version but not by hash (%s%s): the index can still serve different bytes for the same version; add hashes (pip-compile --generate-hashes, or uv pip compile --generate-hashes) and install with --require-hashes", plural(len(noHash), "requirement is", "requirements are"), strings.Join(names, ", "), more))
	}
}

// include follows -r/-c FILE through fsys, the target's root. A
// requirements-like file inside a directory or a repository's working tree
// is checked as its own artifact, so only the others are followed here; a
// single-file target follows every include it can read.
func (s *Scanner) include(ctx context.Context, a *scanners.Artifact, r *rep, fsys fs.FS, dir, rel string, seen map[string]bool, depth int) {
	if fsys == nil || rel == "" || strings.Contains(rel, "://") || strings.HasPrefix(rel, "/") || depth >= maxIncludeDepth {
		return
	}
	p := path.Clean(path.Join(dir, rel))
	if !fs.ValidPath(p) || seen[p] {
		return
	}
	seen[p] = true
	if a.TargetKind != scanners.KindFile && classify(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: p}, nil) == kindRequirements {
		return
	}
	data, err := fs.ReadFile(fsys, p)
	if err != nil || len(data) > maxInput {
		return
	}
	inc := *a
	inc.Path = p // relative to the target's root (a file target's directory)
	child := &sink{a: &inc, seen: map[string]bool{}}
	s.requirements(ctx, &inc, data, child.whole(), fsys, path.Dir(p), seen, depth+1)
	r.s.list = append(r.s.list, child.list...)
}

// plural returns "1 thing" or "N things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
