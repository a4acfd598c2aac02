//go:build !mlwarden_sbatch

package pins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

// Resolver returns the digest ("sha256:…") that an image reference (Docker
// syntax, with a tag) points at now.
type Resolver func(ctx context.Context, ref string) (string, error)

// Edit is one image reference Rewrite pinned.
type Edit struct {
	Line     int
	Old, New string
}

// RewriteResult is a rewritten file.
type RewriteResult struct {
	Data    []byte // the new content; equal to the input when nothing changed
	Edits   []Edit
	Skipped []Skipped
}

// RewriteOption configures Rewrite.
type RewriteOption func(*rewriteConfig)

type rewriteConfig struct {
	actions ActionResolver
}

// WithActions pins GitHub Actions uses: (actions and reusable workflows)
// to the commit their tag or branch points at, asked of resolve, keeping
// the ref as a comment: uses: owner/repo@<sha> # v4. Without it they are
// left alone and reported as not resolvable offline.
func WithActions(resolve ActionResolver) RewriteOption {
	return func(c *rewriteConfig) { c.actions = resolve }
}

// offlineAction is why an action is left alone without a resolver.
const offlineAction = "cannot resolve offline: turning a tag into a commit needs the forge (GitHub's API); run mlwarden pin without --offline, or pin it by hand: uses: owner/repo@<40-hex sha> # tag"

// offlineImage is why an image is left alone without a resolver.
const offlineImage = "cannot resolve offline: turning a tag into a digest needs the registry; run mlwarden pin without --offline, or pin it by hand: name:tag@sha256:<digest>"

// ErrNotRewritable is returned for a file whose kind Rewrite does not know.
var ErrNotRewritable = errors.New("not a Dockerfile, sbatch or shell script, Kubernetes/Compose manifest, CI workflow or Apptainer definition")

// Rewrite pins the image references in one file (Dockerfile, Kubernetes or
// Compose YAML, GitHub Actions or GitLab CI workflow, sbatch or shell
// script, Apptainer definition) to digests from resolve. Only the bytes of
// each reference change: comments and formatting stay as they are. A
// reference given as name:tag becomes name:tag@sha256:…, except where the
// consumer accepts no tag beside a digest (Enroot/Pyxis, Apptainer), where it
// becomes name@sha256:…. References built from variables are pinned at
// their literal assignment when there is one, and otherwise skipped.
//
// A nil resolve leaves images alone, each reported in Skipped as not
// resolvable offline; a resolver returning ErrOffline does the same.
func Rewrite(ctx context.Context, filename string, data []byte, resolve Resolver, opts ...RewriteOption) (*RewriteResult, error) {
	var cfg rewriteConfig
	for _, o := range opts {
		o(&cfg)
	}
	sites, skipped, err := imageSites(filename, data)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sites, func(a, b imageSite) int { return a.start - b.start })
	sites = slices.CompactFunc(sites, func(a, b imageSite) bool { return a.start == b.start })
	res := &RewriteResult{Skipped: skipped}
	var out bytes.Buffer
	last := 0
	var errs []error
	for _, s := range sites {
		if s.start < last || s.end > len(data) || string(data[s.start:s.end]) != s.written+s.tail {
			continue // overlapping or stale: never edit what we did not read
		}
		if s.action {
			pinned, skip, err := pinAction(ctx, cfg.actions, s)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("line %d: resolve %s@%s: %w", s.line, s.actName, s.actRef, err))
				continue
			case skip != "":
				res.Skipped = append(res.Skipped, Skipped{Line: s.line, Ref: s.written, Reason: skip})
				continue
			}
			out.Write(data[last:s.start])
			out.WriteString(pinned)
			last = s.end
			res.Edits = append(res.Edits, Edit{Line: s.line, Old: s.written, New: strings.TrimSpace(strings.SplitN(pinned, "\n", 2)[0])})
			continue
		}
		docker := s.written
		if s.pyxis {
			docker, _ = pyxisImage(s.written)
		}
		if hasDigest(docker) {
			continue
		}
		if _, err := name.ParseReference(docker, name.WeakValidation); err != nil {
			res.Skipped = append(res.Skipped, Skipped{Line: s.line, Ref: s.written, Reason: fmt.Sprintf("not an image reference: %v", err)})
			continue
		}
		if resolve == nil {
			res.Skipped = append(res.Skipped, Skipped{Line: s.line, Ref: s.written, Reason: offlineImage})
			continue
		}
		d, err := resolve(ctx, docker)
		if errors.Is(err, ErrOffline) {
			res.Skipped = append(res.Skipped, Skipped{Line: s.line, Ref: s.written, Reason: offlineImage})
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: resolve %s: %w", s.line, docker, err))
			continue
		}
		if !strings.HasPrefix(d, "sha256:") || !isHex(d[7:], 64) {
			errs = append(errs, fmt.Errorf("line %d: resolve %s: unexpected digest %q", s.line, docker, d))
			continue
		}
		pinned := s.written + "@" + d
		if s.digestOnly || s.pyxis {
			pinned = dropTag(s.written) + "@" + d
		}
		out.Write(data[last:s.start])
		out.WriteString(pinned)
		last = s.end
		res.Edits = append(res.Edits, Edit{Line: s.line, Old: s.written, New: pinned})
	}
	out.Write(data[last:])
	res.Data = out.Bytes()
	slices.SortStableFunc(res.Skipped, func(a, b Skipped) int { return a.Line - b.Line })
	return res, errors.Join(errs...)
}

// pinAction returns the pinned text of an action site (value, what
// followed it on the line, and the ref as a comment when the line has
// none), or why it is left alone.
func pinAction(ctx context.Context, resolve ActionResolver, s imageSite) (pinned, skip string, err error) {
	repo, ok := actionRepo(s.actName)
	switch {
	case !ok:
		return "", "not an owner/repo action", nil
	case s.actRef == "":
		return "", "it names no ref to resolve; pin it by hand: uses: " + s.actName + "@<40-hex sha> # vX.Y.Z", nil
	case resolve == nil:
		return "", offlineAction, nil
	}
	sha, err := resolve(ctx, repo, s.actRef)
	if errors.Is(err, ErrOffline) {
		return "", offlineAction, nil
	}
	if err != nil {
		return "", "", err
	}
	if !isHex(sha, 40) {
		return "", "", fmt.Errorf("unexpected commit %q", sha)
	}
	pinned = s.actName + "@" + strings.ToLower(sha) + s.tail
	if !strings.Contains(s.tail, "#") {
		pinned += " # " + s.actRef
	}
	return pinned, "", nil
}

// discard is a reporter whose findings nobody reads.
func discard(p string) *rep {
	return (&sink{a: &scanners.Artifact{Path: p}, seen: map[string]bool{}}).whole()
}

// imageSites finds where image references are written in a file, and the
// unpinned ones that must be left alone.
func imageSites(filename string, data []byte) ([]imageSite, []Skipped, error) {
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: filename}
	head := data[:min(len(data), scanners.HeadSize)]
	var sites []imageSite
	var skipped []Skipped
	switch classify(a, head) {
	case kindDockerfile:
		ds, err := dockerSites(data)
		return ds, nil, err
	case kindShell:
		st := newShellState()
		st.sites, st.envSites, st.skipped = &sites, map[string]imageSite{}, &skipped
		sc := &shellScan{st: st, r: discard(filename), src: data, sbatch: isSbatch(a, data), root: true}
		if !sc.run() {
			return nil, nil, errors.New("shell syntax could not be parsed")
		}
	case kindYAML:
		docs, err := yamlDocs(data)
		if err != nil {
			return nil, nil, fmt.Errorf("parse YAML: %w", err)
		}
		lines := lineStarts(data)
		y := &yamlScan{r: discard(filename), budget: maxYAMLNodes}
		y.onImage = func(n *yaml.Node, prefix string) {
			if s, ok := scalarSite(data, lines, n, prefix); ok {
				sites = append(sites, s)
			}
		}
		y.onAction = func(n *yaml.Node, name, ref string) {
			s, ok := scalarSite(data, lines, n, "")
			if !ok || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				skipped = append(skipped, Skipped{Line: n.Line, Ref: strings.TrimSpace(n.Value), Reason: "it is written as a block scalar or with escapes, so it cannot be rewritten in place; pin it by hand: uses: " + name + "@<40-hex sha> # " + ref})
				return
			}
			eol := bytes.IndexByte(data[s.end:], '\n')
			if eol < 0 {
				eol = len(data) - s.end
			}
			s.tail = strings.TrimRight(string(data[s.end:s.end+eol]), " \t\r")
			s.end += len(s.tail)
			s.action, s.actName, s.actRef = true, name, ref
			sites = append(sites, s)
		}
		switch flavorOf(a) {
		case yamlGitHub:
			for _, d := range docs {
				y.github(d, 0)
			}
		case yamlGitLab:
			for _, d := range docs {
				y.gitlab(d)
			}
		default:
			for _, d := range docs {
				y.document(a, d)
			}
		}
	case kindApptainer:
		off := 0
		for i, l := range strings.SplitAfter(string(data), "\n") {
			k, v, ok := strings.Cut(l, ":")
			if ok && strings.EqualFold(strings.TrimSpace(k), "from") {
				ref := strings.TrimSpace(v)
				if j := strings.Index(l, ref); ref != "" && j > len(k) {
					sites = append(sites, imageSite{start: off + j, end: off + j + len(ref), line: i + 1, written: ref, digestOnly: true})
				}
			}
			if strings.HasPrefix(strings.TrimSpace(l), "%") {
				break
			}
			off += len(l)
		}
	default:
		return nil, nil, ErrNotRewritable
	}
	return sites, skipped, nil
}

// scalarSite locates a YAML scalar's value in the source from its line and
// column, checking that the bytes there are the value (plain or quoted).
func scalarSite(data []byte, lines []int, n *yaml.Node, prefix string) (imageSite, bool) {
	if n.Line < 1 || n.Line > len(lines) || n.Column < 1 {
		return imageSite{}, false
	}
	start := lines[n.Line-1] + n.Column - 1
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		start++
	}
	val := strings.TrimPrefix(n.Value, prefix)
	if n.Anchor != "" || n.Tag != "" && n.Tag != "!!str" {
		// The column is the anchor's or tag's: the value follows on the line.
		eol := bytes.IndexByte(data[start:], '\n')
		if eol < 0 {
			eol = len(data) - start
		}
		i := strings.Index(string(data[start:start+eol]), n.Value)
		if i < 0 {
			return imageSite{}, false
		}
		start += i
	}
	start += len(n.Value) - len(val)
	end := start + len(val)
	if start < 0 || end > len(data) || string(data[start:end]) != val {
		return imageSite{}, false
	}
	return imageSite{start: start, end: end, line: n.Line, written: val}, true
}

// dockerSites finds FROM and COPY --from images in a Dockerfile, and the
// ARG defaults that FROM ${VAR} uses.
func dockerSites(data []byte) ([]imageSite, error) {
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parse Dockerfile: %w", err)
	}
	lines := lineStarts(data)
	lineText := func(l int) (string, int) {
		if l < 1 || l > len(lines) {
			return "", 0
		}
		end := len(data)
		if l < len(lines) {
			end = lines[l]
		}
		return string(data[lines[l-1]:end]), lines[l-1]
	}
	var sites []imageSite
	args := map[string]imageSite{}
	stages := map[string]bool{}
	seenFrom := false
	// firstArg finds text where an instruction's first argument starts: after
	// the keyword and any --flags.
	firstArg := func(line int, text string) (imageSite, bool) {
		l, off := lineText(line)
		p := len(l) - len(strings.TrimLeft(l, " \t"))
		p = strings.IndexAny(l[p:]+" ", " \t") + p // end of the keyword
		for {
			for p < len(l) && (l[p] == ' ' || l[p] == '\t') {
				p++
			}
			if !strings.HasPrefix(l[p:], "--") {
				break
			}
			p += strings.IndexAny(l[p:]+" ", " \t")
		}
		if !strings.HasPrefix(l[p:], text) {
			return imageSite{}, false
		}
		return imageSite{start: off + p, end: off + p + len(text), line: line, written: text}, true
	}
	// in finds text once on a line after the prefix before.
	in := func(line int, before, text string) (imageSite, bool) {
		l, off := lineText(line)
		if strings.Count(l, before) != 1 {
			return imageSite{}, false
		}
		p := strings.Index(l, before) + len(before)
		if p < len(l) && (l[p] == '"' || l[p] == '\'') {
			p++
		}
		if !strings.HasPrefix(l[p:], text) {
			return imageSite{}, false
		}
		return imageSite{start: off + p, end: off + p + len(text), line: line, written: text}, true
	}
	for _, n := range res.AST.Children {
		a := nodeArgs(n)
		switch strings.ToLower(n.Value) {
		case "arg":
			if seenFrom {
				continue
			}
			for _, x := range a {
				k, v, ok := strings.Cut(x, "=")
				v = strings.Trim(v, `"'`)
				if !ok || v == "" || strings.Contains(v, "$") {
					delete(args, k)
					continue
				}
				if s, ok := in(n.StartLine, k+"=", v); ok {
					args[k] = s
				}
			}
		case "from":
			seenFrom = true
			if len(a) == 0 {
				continue
			}
			img := a[0]
			switch {
			case stages[strings.ToLower(img)] || strings.EqualFold(img, "scratch"):
			case strings.Contains(img, "$"):
				v := strings.Trim(strings.TrimPrefix(img, "$"), "{}")
				if s, ok := args[v]; ok && (img == "$"+v || img == "${"+v+"}") {
					sites = append(sites, s)
				}
			default:
				if s, ok := firstArg(n.StartLine, img); ok {
					sites = append(sites, s)
				}
			}
			if len(a) >= 3 && strings.EqualFold(a[1], "as") {
				stages[strings.ToLower(a[2])] = true
			}
		case "copy":
			for _, f := range n.Flags {
				from, ok := strings.CutPrefix(f, "--from=")
				if !ok || stages[strings.ToLower(from)] || strings.Contains(from, "$") || strings.Trim(from, "0123456789") == "" {
					continue
				}
				if s, ok := in(n.StartLine, "--from=", from); ok {
					sites = append(sites, s)
				}
			}
		}
	}
	return sites, nil
}

// ResolverOption configures RegistryResolver.
type ResolverOption func(*registryResolver)

// WithInsecureRegistries allows plain HTTP to these registry hosts
// (host[:port]). Loopback hosts are always allowed plain HTTP; any other host
// needs HTTPS.
func WithInsecureRegistries(hosts ...string) ResolverOption {
	return func(r *registryResolver) {
		for _, h := range hosts {
			r.insecure[h] = true
		}
	}
}

// WithRemoteOptions adds go-containerregistry remote options (a keychain,
// a transport, a user agent).
func WithRemoteOptions(opts ...remote.Option) ResolverOption {
	return func(r *registryResolver) { r.remote = append(r.remote, opts...) }
}

type registryResolver struct {
	insecure map[string]bool
	remote   []remote.Option
	mu       sync.Mutex
	cache    map[string]string
}

// RegistryResolver resolves tags to digests by asking the registry (a HEAD
// request for the manifest, falling back to GET), with credentials from the
// Docker config. Results are cached, so one reference is asked once.
func RegistryResolver(opts ...ResolverOption) Resolver {
	r := &registryResolver{insecure: map[string]bool{}, cache: map[string]string{}}
	for _, o := range opts {
		o(r)
	}
	return r.resolve
}

func (r *registryResolver) resolve(ctx context.Context, s string) (string, error) {
	r.mu.Lock()
	d, ok := r.cache[s]
	r.mu.Unlock()
	if ok {
		return d, nil
	}
	nopts := []name.Option{name.WeakValidation}
	ref, err := name.ParseReference(s, nopts...)
	if err != nil {
		return "", err
	}
	host := ref.Context().RegistryStr()
	if r.insecure[host] {
		nopts = append(nopts, name.Insecure)
		if ref, err = name.ParseReference(s, nopts...); err != nil {
			return "", err
		}
	}
	ropts := append([]remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithTransport(&httpGuard{next: remote.DefaultTransport, insecure: r.insecure}),
	}, r.remote...)
	desc, err := remote.Head(ref, ropts...)
	if err == nil {
		d = desc.Digest.String()
	} else {
		full, gerr := remote.Get(ref, ropts...)
		if gerr != nil {
			return "", gerr
		}
		d = full.Digest.String()
	}
	r.mu.Lock()
	r.cache[s] = d
	r.mu.Unlock()
	return d, nil
}

// httpGuard refuses plain HTTP except to loopback hosts and the registries
// the user named as insecure (go-containerregistry would also use it for
// private address ranges).
type httpGuard struct {
	next     http.RoundTripper
	insecure map[string]bool
}

func (g *httpGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure[req.URL.Host] && !isLoopback(req.URL.Hostname()) {
		return nil, fmt.Errorf("refusing plain HTTP to %s (pass --insecure-registry %s to allow it)", req.URL.Host, req.URL.Host)
	}
	return g.next.RoundTrip(req)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// UnifiedDiff returns a unified diff between two versions of a file whose
// edits kept the number of lines (as Rewrite's do), with 3 lines of context.
func UnifiedDiff(name string, old, new []byte) string {
	a, b := strings.SplitAfter(string(old), "\n"), strings.SplitAfter(string(new), "\n")
	if len(a) != len(b) {
		return fmt.Sprintf("--- a/%s\n+++ b/%s\n(line count changed)\n", name, name)
	}
	var changed []int
	for i := range a {
		if a[i] != b[i] {
			changed = append(changed, i)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	const ctx = 3
	for i := 0; i < len(changed); {
		start := max(0, changed[i]-ctx)
		j := i
		for j+1 < len(changed) && changed[j+1]-changed[j] <= 2*ctx {
			j++
		}
		end := min(len(a), changed[j]+ctx+1)
		if end > 0 && a[end-1] == "" {
			end-- // the empty piece after a final newline
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", start+1, end-start, start+1, end-start)
		for k := start; k < end; k++ {
			if a[k] == b[k] {
				out.WriteString(" " + noEOL(a[k]))
				continue
			}
			out.WriteString("-" + noEOL(a[k]))
			out.WriteString("+" + noEOL(b[k]))
		}
		i = j + 1
	}
	return out.String()
}

func noEOL(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n\\ No newline at end of file\n"
}
