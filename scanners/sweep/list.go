//go:build !mlwarden_sbatch

// Package sweep scans many targets as one job split into shards: it lists
// what a set of patterns names (a registry's repositories and tags, a Hub
// organisation's models, a file of targets), splits the list in a stable
// order, scans one shard through the one pipeline (scanners/scan), skips
// targets whose result for this rules version is already in the shared
// cache, merges the shards' reports into one, and writes the Kubernetes
// Indexed Job that runs one shard per pod.
package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/scanners/source/netbound"
)

// Lister expands patterns into targets.
type Lister struct {
	// Insecure lists registry hosts reached over plain HTTP (loopback
	// always is).
	Insecure []string
	// Keychain resolves registry credentials (default
	// authn.DefaultKeychain).
	Keychain authn.Keychain
	// PageSize is how many repositories or tags one catalog or tags-list
	// request asks for (default: the registry's).
	PageSize int
	// HubEndpoint is the Hugging Face Hub (default $HF_ENDPOINT, else
	// https://huggingface.co); HubToken authenticates to it.
	HubEndpoint, HubToken string
	// HTTPClient reaches the Hub (default: one within NetworkTimeout).
	HTTPClient *http.Client
	// NetworkTimeout bounds every wait on a registry or the Hub as the
	// sources' requests are bounded (scanners/source/netbound; default
	// image.DefaultNetworkTimeout; negative: no bound): one budget per
	// pattern, so a server that never answers ends the listing within
	// twice it.
	NetworkTimeout time.Duration
	// MaxTargets bounds the list (default DefaultMaxTargets): a pattern
	// that names more is an error, never a silent cut. It is checked as
	// each page of a listing arrives.
	MaxTargets int

	bound listBounds // overrides listBounds' defaults (tests)
}

// DefaultMaxTargets bounds a sweep's list.
const DefaultMaxTargets = 100_000

// maxFile bounds an @FILE list.
const maxFile = 64 << 20

// List returns the targets the patterns name, sorted, each once:
//
//	registry:HOST/REPO-GLOB[:TAG-GLOB]  the registry's catalog and tags lists (paginated);
//	                                    * matches within a path segment, ** across them;
//	                                    no TAG-GLOB: every tag
//	hf:ORG/GLOB, hf:datasets/ORG/GLOB   a Hub organisation's models (datasets), paginated
//	@FILE                               one target a line (# comments; - is standard input)
//	anything else                       itself, one target
func (l *Lister) List(ctx context.Context, stdin io.Reader, patterns ...string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		got, err := l.expand(ctx, stdin, p)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		if len(out) > l.max() {
			return nil, fmt.Errorf("the patterns name more than %d targets: split the sweep", l.max())
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (l *Lister) max() int {
	if l.MaxTargets > 0 {
		return l.MaxTargets
	}
	return DefaultMaxTargets
}

func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[{") }

func (l *Lister) expand(ctx context.Context, stdin io.Reader, p string) ([]string, error) {
	switch {
	case strings.HasPrefix(p, "@"):
		return readList(stdin, p[1:])
	case strings.HasPrefix(p, "registry:") && hasMeta(p):
		return l.registry(ctx, strings.TrimPrefix(p, "registry:"))
	case strings.HasPrefix(p, "hf:") && hasMeta(p):
		return l.hub(ctx, strings.TrimPrefix(p, "hf:"))
	}
	return []string{p}, nil
}

// readList reads one target a line.
func readList(stdin io.Reader, file string) ([]string, error) {
	var data []byte
	var err error
	if file == "-" {
		if stdin == nil {
			return nil, errors.New("@-: no standard input")
		}
		data, err = io.ReadAll(io.LimitReader(stdin, maxFile+1))
	} else {
		var f *os.File
		if f, err = os.Open(file); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxFile+1))
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("@%s: %w", file, err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("@%s: larger than %d bytes", file, maxFile)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("@%s: %w", file, err)
	}
	return out, nil
}

func (l *Lister) remoteOptions(ctx context.Context) []remote.Option {
	kc := l.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	o := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithUserAgent("mlwarden"),
		remote.WithTransport(l.baseTransport("the registry"))}
	if l.PageSize > 0 {
		o = append(o, remote.WithPageSize(l.PageSize))
	}
	return o
}

// baseTransport is a transport within NetworkTimeout, with a budget of
// its own, for server ("the registry", "the Hub").
func (l *Lister) baseTransport(server string) http.RoundTripper {
	d := l.NetworkTimeout
	if d == 0 {
		d = image.DefaultNetworkTimeout
	}
	if d < 0 {
		return remote.DefaultTransport
	}
	base := netbound.Bound(remote.DefaultTransport.(*http.Transport).Clone(), d)
	return netbound.New(base, d, server)
}

func (l *Lister) nameOptions(host string) []name.Option {
	if slices.Contains(l.Insecure, host) {
		return []name.Option{name.Insecure}
	}
	return nil
}

// Bounds of one registry pattern's listing (its catalog and every tags
// list it reads), checked page by page as the pages arrive: a registry
// that pages forever, or sends one endless page, is an error of the
// sweep long before it is a memory problem. Lister's unexported fields
// override them (tests).
const (
	// maxListPages bounds the pages of one catalog or tags list.
	maxListPages = 10_000
	// maxListPage bounds the bytes of one page's answer.
	maxListPage = 16 << 20
	// maxListBytes bounds the bytes of every answer of one pattern.
	maxListBytes = 256 << 20
	// maxListNames bounds the repositories and tags one pattern's
	// listings name, matching the globs or not.
	maxListNames = 1_000_000
)

// listBounds are the bounds a listing runs under.
type listBounds struct{ pages, page, bytes, names int }

func (l *Lister) bounds() listBounds {
	b := listBounds{maxListPages, maxListPage, maxListBytes, maxListNames}
	if l.bound.pages > 0 {
		b.pages = l.bound.pages
	}
	if l.bound.page > 0 {
		b.page = l.bound.page
	}
	if l.bound.bytes > 0 {
		b.bytes = l.bound.bytes
	}
	if l.bound.names > 0 {
		b.names = l.bound.names
	}
	return b
}

// errListTooLarge is a listing answer past listBounds' bytes.
var errListTooLarge = errors.New("listing too large")

// listTransport bounds the bytes of each answer and of all of them.
type listTransport struct {
	base        http.RoundTripper
	page, total int64
	read        atomic.Int64
}

func (t *listTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.read.Load() > t.total {
		return nil, fmt.Errorf("%w: the answers hold more than %d bytes", errListTooLarge, t.total)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &listBody{rc: resp.Body, t: t, left: t.page}
	return resp, nil
}

type listBody struct {
	rc   io.ReadCloser
	t    *listTransport
	left int64
}

func (b *listBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%w: a page larger than %d bytes", errListTooLarge, b.t.page)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.t.read.Add(int64(n)) > b.t.total {
		return n, fmt.Errorf("%w: the answers hold more than %d bytes", errListTooLarge, b.t.total)
	}
	return n, err
}

func (b *listBody) Close() error { return b.rc.Close() }

// registry expands HOST/REPO-GLOB[:TAG-GLOB]. The catalog and the tags
// lists are read a page at a time, within listBounds and MaxTargets.
func (l *Lister) registry(ctx context.Context, p string) ([]string, error) {
	host, rest, ok := strings.Cut(p, "/")
	if !ok || rest == "" {
		return nil, fmt.Errorf("registry:%s: want registry:HOST/REPO-GLOB[:TAG-GLOB]", p)
	}
	repoGlob, tagGlob := rest, "*"
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		repoGlob, tagGlob = rest[:i], rest[i+1:]
	}
	if !doublestar.ValidatePattern(repoGlob) {
		return nil, fmt.Errorf("registry:%s: bad repository glob %q", p, repoGlob)
	}
	if _, err := path.Match(tagGlob, ""); err != nil {
		return nil, fmt.Errorf("registry:%s: bad tag glob %q", p, tagGlob)
	}
	reg, err := name.NewRegistry(host, l.nameOptions(host)...)
	if err != nil {
		return nil, fmt.Errorf("registry:%s: %w", p, err)
	}
	b := l.bounds()
	lt := &listTransport{base: l.baseTransport("the registry"), page: int64(b.page), total: int64(b.bytes)}
	puller, err := remote.NewPuller(append(l.remoteOptions(ctx), remote.WithTransport(lt))...)
	if err != nil {
		return nil, fmt.Errorf("registry:%s: %w", p, err)
	}
	names := 0 // repositories and tags listed
	count := func(n int) error {
		if names += n; names > b.names {
			return fmt.Errorf("registry:%s: the listings name more than %d repositories and tags: narrow the pattern", p, b.names)
		}
		return nil
	}
	repos := []string{repoGlob}
	if hasMeta(repoGlob) {
		repos = repos[:0]
		what := "list repositories (the registry's /v2/_catalog)"
		cat, err := puller.Catalogger(ctx, reg)
		for page := 0; err == nil && cat.HasNext(); page++ {
			if page >= b.pages {
				return nil, fmt.Errorf("registry:%s: %s: more than %d pages: narrow the pattern", p, what, b.pages)
			}
			var c *remote.Catalogs
			if c, err = cat.Next(ctx); err != nil {
				break
			}
			if err = count(len(c.Repos)); err != nil {
				return nil, err
			}
			for _, r := range c.Repos {
				if ok, _ := doublestar.Match(repoGlob, r); ok {
					repos = append(repos, r)
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("registry:%s: %s: %w", p, what, err)
		}
	}
	var out []string
	for _, r := range repos {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		repo, err := name.NewRepository(host+"/"+r, l.nameOptions(host)...)
		if err != nil {
			return nil, fmt.Errorf("registry:%s: %w", p, err)
		}
		what := "list tags of " + r
		tl, err := puller.Lister(ctx, repo)
		for page := 0; err == nil && tl.HasNext(); page++ {
			if page >= b.pages {
				return nil, fmt.Errorf("registry:%s: %s: more than %d pages: narrow the pattern", p, what, b.pages)
			}
			var tags *remote.Tags
			if tags, err = tl.Next(ctx); err != nil {
				break
			}
			if err = count(len(tags.Tags)); err != nil {
				return nil, err
			}
			for _, t := range tags.Tags {
				if ok, _ := path.Match(tagGlob, t); ok {
					out = append(out, "registry:"+host+"/"+r+":"+t)
				}
			}
			if len(out) > l.max() {
				return nil, fmt.Errorf("registry:%s names more than %d targets: split the sweep", p, l.max())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("registry:%s: %s: %w", p, what, err)
		}
	}
	return out, nil
}

func (l *Lister) hubEndpoint() string {
	if l.HubEndpoint != "" {
		return strings.TrimRight(l.HubEndpoint, "/")
	}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		return strings.TrimRight(e, "/")
	}
	return "https://huggingface.co"
}

func (l *Lister) client() *http.Client {
	if l.HTTPClient != nil {
		return l.HTTPClient
	}
	return &http.Client{Transport: l.baseTransport("the Hub")}
}

// maxHubPage bounds one page of the Hub's listing.
const maxHubPage = 32 << 20

// hub expands [datasets/|spaces/]ORG/GLOB through the Hub's API:
// GET /api/models?author=ORG (datasets, spaces), following its Link
// headers.
func (l *Lister) hub(ctx context.Context, p string) ([]string, error) {
	kind, rest := "models", p
	prefix := ""
	for _, k := range []string{"datasets", "spaces"} {
		if r, ok := strings.CutPrefix(p, k+"/"); ok {
			kind, rest, prefix = k, r, k+"/"
		}
	}
	org, glob, ok := strings.Cut(rest, "/")
	if !ok || org == "" || hasMeta(org) || strings.Contains(glob, "/") {
		return nil, fmt.Errorf("hf:%s: want hf:[datasets/|spaces/]ORG/GLOB", p)
	}
	if _, err := path.Match(glob, ""); err != nil {
		return nil, fmt.Errorf("hf:%s: bad glob %q", p, glob)
	}
	next := l.hubEndpoint() + "/api/" + kind + "?" + url.Values{"author": {org}, "limit": {"1000"}}.Encode()
	var out []string
	client := l.client() // one network budget for the pattern
	for pages := 0; next != ""; pages++ {
		if pages > 1000 {
			return nil, fmt.Errorf("hf:%s: more than 1000 pages", p)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return nil, fmt.Errorf("hf:%s: %w", p, err)
		}
		req.Header.Set("User-Agent", "mlwarden")
		if l.HubToken != "" && sameHost(next, l.hubEndpoint()) {
			req.Header.Set("Authorization", "Bearer "+l.HubToken)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("hf:%s: list %s: %w", p, kind, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxHubPage+1))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("hf:%s: list %s: %w", p, kind, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("hf:%s: list %s: the Hub answered %s", p, kind, resp.Status)
		}
		if len(body) > maxHubPage {
			return nil, fmt.Errorf("hf:%s: a listing page larger than %d bytes", p, maxHubPage)
		}
		var repos []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(body, &repos); err != nil {
			return nil, fmt.Errorf("hf:%s: the Hub's listing: %w", p, err)
		}
		for _, r := range repos {
			o, n, ok := strings.Cut(r.ID, "/")
			if !ok || !strings.EqualFold(o, org) || n == "" || strings.ContainsAny(n, "/@ \t\n") {
				continue // not this organisation's, or not a name
			}
			if ok, _ := path.Match(glob, n); ok {
				out = append(out, "hf:"+prefix+r.ID)
			}
		}
		if len(out) > l.max() {
			return nil, fmt.Errorf("hf:%s names more than %d targets: split the sweep", p, l.max())
		}
		next = nextLink(resp.Header.Get("Link"), next)
	}
	return out, nil
}

// nextLink is the rel="next" URL of a Link header, resolved against base
// and kept on base's host.
func nextLink(h, base string) string {
	for _, part := range strings.Split(h, ",") {
		u, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(params, `rel="next"`) {
			continue
		}
		u = strings.Trim(strings.TrimSpace(u), "<>")
		b, err1 := url.Parse(base)
		r, err2 := url.Parse(u)
		if err1 != nil || err2 != nil {
			return ""
		}
		n := b.ResolveReference(r)
		if n.Host != b.Host || n.Scheme != b.Scheme {
			return "" // the listing never sends us elsewhere
		}
		return n.String()
	}
	return ""
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host
}
