package hf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/scanners/cache"
	"github.com/mlwarden/mlwarden/scanners/source/netbound"
)

// DefaultEndpoint is the Hub the Hub's clients use without HF_ENDPOINT.
const DefaultEndpoint = "https://huggingface.co"

// Defaults of Options.
const (
	DefaultDownloadLimit = 2 << 30
	DefaultMaxRetries    = 4
	DefaultMaxWait       = 60 * time.Second
	DefaultMaxFiles      = 1_000_000
	// DefaultNetworkTimeout is Options.NetworkTimeout's default, the
	// registry client's.
	DefaultNetworkTimeout = 30 * time.Second
)

// Options configures the Hub source and its client.
type Options struct {
	// Endpoint is the Hub's base URL (a mirror, a self-hosted Hub, an
	// artifact manager's Hub remote). Default: HF_ENDPOINT, else
	// DefaultEndpoint.
	Endpoint string
	// Token authenticates to the endpoint. Default: HF_TOKEN,
	// HUGGING_FACE_HUB_TOKEN, or the token file the Hub's CLI writes
	// (HF_TOKEN_PATH, default $HF_HOME/token). It is sent to the
	// endpoint's host only, never to the hosts files are redirected to.
	Token Token
	// DownloadLimit bounds the bytes downloaded for one target (default
	// DefaultDownloadLimit; negative: no bound). A read past it fails, so
	// that file is an error of the run, and the target notes what it left.
	DownloadLimit int64
	// Workers bounds the files read at once (default 8).
	Workers int
	// MaxFiles bounds the files a tree may list, and the directories
	// they are in (default DefaultMaxFiles).
	MaxFiles int
	// MaxRetries is how often a request the Hub answered with 429 (rate
	// limited), 408 or 5xx is tried again (default DefaultMaxRetries);
	// MaxWait is the longest wait honoured between tries (default
	// DefaultMaxWait): a Hub asking for longer fails the request at once.
	MaxRetries int
	MaxWait    time.Duration
	// NetworkTimeout bounds every wait on the Hub and its file host
	// (default DefaultNetworkTimeout; negative: only a 60 s bound on
	// response headers): connecting, the TLS handshake, the response
	// headers, any read of a body that gets nothing, and a body that sends
	// less than 1 KiB in that much waiting. The first such timeout is not
	// retried and spends the target's budget: its later requests fail at
	// once (scanners/source/netbound).
	NetworkTimeout time.Duration
	// Transport makes the requests (default: a clone of
	// http.DefaultTransport with NetworkTimeout's connect, TLS and header
	// timeouts). NetworkTimeout's bounds on bodies apply to it too.
	Transport http.RoundTripper
	// Getenv looks environment variables up (default os.LookupEnv).
	Getenv func(string) (string, bool)
	// Cache, with RulesVersion, keeps the result of each Git LFS file
	// read whole and found to hash to its object id, by that id, its path
	// and the rules version; a later scan of a file with the same id and
	// path replays it without downloading the file (results.go). Nil or
	// an empty RulesVersion: every file is scanned.
	Cache        *cache.Cache
	RulesVersion string

	// sleep waits between tries (tests shorten it).
	sleep func(ctx context.Context, d time.Duration) error
}

func (o Options) withDefaults() Options {
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
	}
	if o.Endpoint == "" {
		if v, ok := o.Getenv("HF_ENDPOINT"); ok && v != "" {
			o.Endpoint = v
		} else {
			o.Endpoint = DefaultEndpoint
		}
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if !o.Token.Set() {
		o.Token = findToken(o.Getenv)
	}
	if o.DownloadLimit == 0 {
		o.DownloadLimit = DefaultDownloadLimit
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.NetworkTimeout == 0 {
		o.NetworkTimeout = DefaultNetworkTimeout
	}
	if o.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 60 * time.Second
		t.DisableCompression = true
		o.Transport = netbound.Bound(t, o.NetworkTimeout)
	}
	if o.sleep == nil {
		o.sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return o
}

// Errors a caller can tell apart with errors.Is.
var (
	// ErrNotFound: the repository, the revision or a file is not there, or
	// not visible without (another) token.
	ErrNotFound = errors.New("not found")
	// ErrAuth: the token was refused, or it lacks access (gated, private).
	ErrAuth = errors.New("not authorized")
	// ErrRateLimited: the Hub kept answering 429.
	ErrRateLimited = errors.New("rate limited")
	// ErrChanged: a file's size, digest or commit is not what the listing
	// said.
	ErrChanged = errors.New("changed between listing and download")
	// ErrInsecure: a redirect (or the endpoint, for a token) to a plain
	// HTTP host that is not loopback.
	ErrInsecure = errors.New("refused plain HTTP")
)

// hubError is an error with a message for the user and a kind for errors.Is.
type hubError struct {
	kind error
	msg  string
}

func (e *hubError) Error() string { return e.msg }
func (e *hubError) Unwrap() error { return e.kind }

// client speaks the Hub's HTTP API.
type client struct {
	o    Options
	ep   *url.URL
	http *http.Client
}

func newClient(o Options) (*client, error) {
	ep, err := url.Parse(o.Endpoint)
	if err != nil || (ep.Scheme != "https" && ep.Scheme != "http") || ep.Host == "" || ep.RawQuery != "" || ep.Fragment != "" {
		return nil, fmt.Errorf("the Hub endpoint %q: want an http(s) URL such as %s (HF_ENDPOINT, --hf-endpoint)", o.Endpoint, DefaultEndpoint)
	}
	if ep.User != nil {
		return nil, errors.New("the Hub endpoint: a user or password in the URL is not accepted; pass the token in HF_TOKEN")
	}
	if ep.Scheme == "http" && !loopback(ep.Hostname()) && o.Token.Set() {
		return nil, &hubError{ErrInsecure, fmt.Sprintf("the Hub endpoint %s is plain HTTP: refusing to send the Hub token (%s) over it; use https", ep.Redacted(), o.Token)}
	}
	return &client{o: o, ep: ep, http: &http.Client{
		// One budget per target: newClient is called once per Open.
		Transport:     netbound.New(o.Transport, o.NetworkTimeout, "the Hub"),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// loopback reports whether host (no port) is this machine.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// url joins the endpoint and path segments, each escaped.
func (c *client) url(segments ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(c.ep.String(), "/"))
	for _, s := range segments {
		for _, p := range strings.Split(s, "/") {
			b.WriteByte('/')
			b.WriteString(url.PathEscape(p))
		}
	}
	return b.String()
}

// sameHost reports whether u is on the endpoint's scheme and host, the
// only place the token goes.
func (c *client) sameHost(u *url.URL) bool {
	return u.Scheme == c.ep.Scheme && strings.EqualFold(u.Host, c.ep.Host)
}

// maxRedirects bounds a redirect chain.
const maxRedirects = 10

// response is a final answer and the first hop's headers (the Hub's own,
// before a redirect to the file host).
type response struct {
	*http.Response
	first http.Header
	final *url.URL
}

// get sends GET u, following redirects itself (the token only on the
// endpoint's host, never to plain HTTP off loopback) and trying again on
// 429, 408 and 5xx. A non-2xx final answer is returned as an error; what
// says how to go on.
func (c *client) get(ctx context.Context, u string, hdr http.Header, what string) (*response, error) {
	for try := 0; ; try++ {
		resp, err := c.once(ctx, u, hdr, what)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500
		if !retry || try >= c.o.MaxRetries {
			defer resp.Body.Close()
			return nil, c.statusError(resp.Response, what, try)
		}
		wait := retryWait(resp.Header, try)
		resp.Body.Close()
		if wait > c.o.MaxWait {
			return nil, c.statusError(resp.Response, what, try)
		}
		if err := c.o.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// once sends one request and follows its redirects.
func (c *client) once(ctx context.Context, u string, hdr http.Header, what string) (*response, error) {
	cur, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("%s: bad URL: %w", what, err)
	}
	var first http.Header
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cur.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", "mlwarden")
		req.Header.Set("Accept-Encoding", "identity")
		if c.o.Token.Set() && c.sameHost(cur) {
			req.Header.Set("Authorization", "Bearer "+c.o.Token.value)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s: %s", what, redactErr(err))
		}
		if first == nil {
			first = resp.Header
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return &response{Response: resp, first: first, final: cur}, nil
		}
		loc := resp.Header.Get("Location")
		resp.Body.Close()
		if hop >= maxRedirects {
			return nil, fmt.Errorf("%s: more than %d redirects", what, maxRedirects)
		}
		next, err := cur.Parse(loc)
		if err != nil || (next.Scheme != "https" && next.Scheme != "http") {
			return nil, fmt.Errorf("%s: the Hub redirected to an unusable location", what)
		}
		if next.Scheme != "https" && !loopback(next.Hostname()) {
			return nil, &hubError{ErrInsecure, fmt.Sprintf("%s: refused a redirect to plain HTTP at %s: files are fetched over https only (or from loopback)", what, next.Host)}
		}
		cur = next
	}
}

// retryWait is how long to wait before try+1: the reset time of an
// exhausted RateLimit window (IETF draft, as the Hub sends it: r=0;t=S),
// Retry-After in seconds, or 1, 2, 4, 8 s.
func retryWait(h http.Header, try int) time.Duration {
	if rl := h.Get("RateLimit"); rl != "" {
		var r, t = -1, -1
		for _, part := range strings.Split(rl, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				continue
			}
			switch k {
			case "r":
				r = n
			case "t":
				t = n
			}
		}
		if r == 0 && t >= 0 {
			return time.Duration(t+1) * time.Second
		}
	}
	if ra := h.Get("Retry-After"); ra != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(ra)); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
	}
	return time.Duration(1<<min(try, 5)) * time.Second
}

// hubMessage is the Hub's own words about an error: X-Error-Message, or
// the JSON body's "error", on one short line.
func hubMessage(resp *http.Response) string {
	msg := resp.Header.Get("X-Error-Message")
	if msg == "" {
		var body struct {
			Error string `json:"error"`
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if json.Unmarshal(data, &body) == nil {
			msg = body.Error
		}
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// tokenHow says how to pass a token.
const tokenHow = "pass a token with read access in HF_TOKEN, or log in with `hf auth login` (it writes ~/.cache/huggingface/token)"

// statusError turns a final non-2xx answer into a message a user can act on.
func (c *client) statusError(resp *http.Response, what string, tries int) error {
	code := resp.Header.Get("X-Error-Code")
	msg := hubMessage(resp)
	hub := ""
	if msg != "" {
		hub = " (the Hub says: " + msg + ")"
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := retryWait(resp.Header, tries)
		how := "wait and run again"
		if !c.o.Token.Set() {
			how = "wait and run again, or " + tokenHow + ": logged-in users get a higher quota"
		}
		return &hubError{ErrRateLimited, fmt.Sprintf("%s: rate limited by %s after %d tries (it asks to wait %s): %s%s", what, c.ep.Host, tries+1, wait, how, hub)}
	case code == "GatedRepo":
		how := tokenHow + ", after accepting the repository's conditions on its page while logged in"
		if c.o.Token.Set() {
			how = "accept the repository's conditions on its page while logged in as the owner of the " + c.o.Token.String()
		}
		return &hubError{ErrAuth, fmt.Sprintf("%s: gated repository: %s%s", what, how, hub)}
	case code == "RevisionNotFound":
		return &hubError{ErrNotFound, fmt.Sprintf("%s: revision not found: name a branch, tag or full commit of the repository%s", what, hub)}
	case code == "EntryNotFound":
		return &hubError{ErrChanged, fmt.Sprintf("%s: the file is listed in the tree but the Hub does not serve it: %v%s", what, ErrChanged, hub)}
	case resp.StatusCode == http.StatusUnauthorized && strings.Contains(msg, "Invalid credentials"):
		return &hubError{ErrAuth, fmt.Sprintf("%s: the Hub refused the %s: create a new one at %s/settings/tokens", what, c.o.Token, c.ep.Redacted())}
	case code == "RepoNotFound" || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusNotFound:
		// The Hub answers 401 for a repository that is private, gated or
		// missing alike.
		how := "check the name; if it is private or gated, " + tokenHow
		if c.o.Token.Set() {
			how = "check the name, and that the " + c.o.Token.String() + " can read it"
		}
		return &hubError{ErrNotFound, fmt.Sprintf("%s: repository not found or not accessible (%s): %s%s", what, resp.Status, how, hub)}
	case resp.StatusCode == http.StatusForbidden:
		how := tokenHow
		if c.o.Token.Set() {
			how = "the " + c.o.Token.String() + " lacks access to it (a fine-grained token needs read access to this repository)"
		}
		return &hubError{ErrAuth, fmt.Sprintf("%s: access denied (%s): %s%s", what, resp.Status, how, hub)}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return &hubError{ErrChanged, fmt.Sprintf("%s: the server refused the byte range (%s): the file is not the size the tree lists (%v)", what, resp.Status, ErrChanged)}
	}
	return fmt.Errorf("%s: %s from %s after %d tries%s", what, resp.Status, resp.Request.URL.Host, tries+1, hub)
}

// redactErr drops query strings (signed URLs) from an HTTP client error.
func redactErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		u, perr := url.Parse(ue.URL)
		if perr == nil {
			u.RawQuery, u.User = "", nil
			return fmt.Sprintf("%s %s: %v", ue.Op, u.String(), ue.Err)
		}
		return fmt.Sprintf("%s: %v", ue.Op, ue.Err)
	}
	return err.Error()
}

// maxJSON bounds one API answer read into memory.
const maxJSON = 64 << 20

// getJSON fetches u and decodes its JSON body into v.
func (c *client) getJSON(ctx context.Context, u, what string, v any) (*response, error) {
	resp, _, err := c.getJSONLimit(ctx, u, what, v, maxJSON)
	return resp, err
}

// getJSONLimit is getJSON for an answer of at most limit bytes; it also
// says how many bytes the answer held.
func (c *client) getJSONLimit(ctx context.Context, u, what string, v any, limit int64) (*response, int64, error) {
	resp, err := c.get(ctx, u, http.Header{"Accept": {"application/json"}}, what)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return nil, 0, fmt.Errorf("%s: read: %s", what, redactErr(err))
	}
	if int64(len(data)) > limit {
		return nil, 0, fmt.Errorf("%s: answer larger than %d bytes", what, limit)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, 0, fmt.Errorf("%s: the answer is not the Hub's JSON: %v", what, err)
	}
	return resp, int64(len(data)), nil
}

// repoInfo is what the revision answer says of a repository besides its
// commit: its card's metadata (cardData, the README's YAML block as the Hub
// read it) and its access gate (gated: false, "auto" or "manual").
type repoInfo struct {
	SHA      string          `json:"sha"`
	Gated    json.RawMessage `json:"gated"`
	CardData struct {
		License     json.RawMessage `json:"license"`
		LicenseName string          `json:"license_name"`
		LicenseLink string          `json:"license_link"`
		GatePrompt  string          `json:"extra_gated_prompt"`
		GateFields  map[string]any  `json:"extra_gated_fields"`
	} `json:"cardData"`
}

// revision asks which commit rev of r is (GET /api/{type}s/{id}/revision/{rev}),
// and what the answer says of the repository's card and gate.
func (c *client) revision(ctx context.Context, r Ref) (string, *repoInfo, error) {
	what := r.String()
	var info repoInfo
	// The revision is one path segment: "refs/pr/1" is sent as refs%2Fpr%2F1.
	u := c.url("api", r.apiType(), r.ID, "revision") + "/" + url.PathEscape(r.Rev())
	if _, err := c.getJSON(ctx, u, what, &info); err != nil {
		return "", nil, err
	}
	if !IsCommit(info.SHA) {
		return "", nil, fmt.Errorf("%s: the Hub's answer names no commit for revision %q", what, r.Rev())
	}
	return info.SHA, &info, nil
}

// properties are the target's Properties the info gives (scanners.Target):
// the card's licence fields as written (the models check normalises them)
// and the gate. Values are bounded: they are the Hub's text.
func (i *repoInfo) properties() map[string]string {
	p := map[string]string{}
	set := func(k, v string, n int) {
		v = strings.TrimSpace(v)
		if len(v) > n {
			v = strings.ToValidUTF8(v[:n], "") + "…"
		}
		if v != "" {
			p[k] = v
		}
	}
	var one string
	var many []string
	switch {
	case json.Unmarshal(i.CardData.License, &one) == nil:
		set("hub.license", one, 200)
	case json.Unmarshal(i.CardData.License, &many) == nil:
		set("hub.license", strings.Join(many[:min(len(many), 20)], ","), 400)
	}
	set("hub.license_name", i.CardData.LicenseName, 200)
	set("hub.license_link", i.CardData.LicenseLink, 500)
	var gate string
	if json.Unmarshal(i.Gated, &gate) == nil {
		set("hub.gated", gate, 20)
	} else if string(i.Gated) == "true" {
		p["hub.gated"] = "auto"
	}
	if p["hub.gated"] != "" {
		set("hub.gate_prompt", i.CardData.GatePrompt, 500)
		fields := make([]string, 0, len(i.CardData.GateFields))
		for k := range i.CardData.GateFields {
			fields = append(fields, k)
		}
		slices.Sort(fields)
		set("hub.gate_fields", strings.Join(fields[:min(len(fields), 20)], ", "), 500)
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// File is one file of a repository's tree.
type File struct {
	Path string
	Size int64
	// OID is the git blob id (sha1 of "blob SIZE\0" and the content).
	OID string
	// LFS is set for a file stored in Git LFS (or Xet behind its bridge):
	// its sha256 and size.
	LFS *LFS
}

// LFS is a file's Git LFS object.
type LFS struct {
	OID  string `json:"oid"`
	Size int64  `json:"size"`
}

type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *LFS   `json:"lfs"`
}

// Bounds of a tree listing, checked as the pages arrive (Options.MaxFiles
// bounds its files, and the directories they make): a Hub that lists
// forever, or paths very long or very deep, is the target's error, not a
// memory problem.
const (
	// maxPages bounds the tree's pages.
	maxPages = 100_000
	// maxTreeBytes bounds the bytes of every page together (maxJSON
	// bounds one page).
	maxTreeBytes = 512 << 20
	// maxPathLen bounds the bytes of one path (Linux's PATH_MAX).
	maxPathLen = 4096
	// maxDepth bounds the components of one path.
	maxDepth = 256
)

// tree lists the files of r at commit sha, every page of
// GET /api/{type}s/{id}/tree/{sha}?recursive=true (GitHub-style Link
// headers; a next page must be on the endpoint's host).
func (c *client) tree(ctx context.Context, r Ref, sha string) ([]File, error) {
	what := r.String() + ": list files"
	u := c.url("api", r.apiType(), r.ID, "tree", sha) + "?recursive=true"
	var out []File
	var read int64
	for page := 0; u != ""; page++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if page >= maxPages {
			return nil, fmt.Errorf("%s: more than %d pages", what, maxPages)
		}
		if read >= maxTreeBytes {
			return nil, fmt.Errorf("%s: the listing is larger than %d bytes", what, maxTreeBytes)
		}
		var entries []treeEntry
		resp, n, err := c.getJSONLimit(ctx, u, what, &entries, min(maxJSON, maxTreeBytes-read))
		if err != nil {
			return nil, err
		}
		read += n
		for i, e := range entries {
			if i%4096 == 4095 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if e.Type != "file" {
				continue
			}
			switch {
			case len(e.Path) > maxPathLen:
				return nil, fmt.Errorf("%s: the tree lists a path of %d bytes (%.40s…), more than %d", what, len(e.Path), e.Path, maxPathLen)
			case strings.Count(e.Path, "/") >= maxDepth:
				return nil, fmt.Errorf("%s: the tree lists a path %d directories deep (%.40s…), more than %d", what, strings.Count(e.Path, "/"), e.Path, maxDepth)
			}
			switch {
			case e.Size < 0:
				return nil, fmt.Errorf("%s: %s: the tree gives it a negative size (%d)", what, e.Path, e.Size)
			case e.LFS != nil && e.LFS.Size != e.Size && e.LFS.Size != 0:
				return nil, fmt.Errorf("%s: %s: the tree gives it two sizes (%d, LFS %d)", what, e.Path, e.Size, e.LFS.Size)
			}
			out = append(out, File{Path: e.Path, Size: e.Size, OID: strings.ToLower(e.OID), LFS: e.LFS})
			if len(out) > c.o.MaxFiles {
				return nil, fmt.Errorf("%s: more than %d files (the source's bound)", what, c.o.MaxFiles)
			}
		}
		u = ""
		if next := nextLink(resp.Header.Get("Link")); next != "" {
			nu, err := resp.final.Parse(next)
			if err != nil || !c.sameHost(nu) {
				return nil, fmt.Errorf("%s: the next page is not on %s", what, c.ep.Host)
			}
			u = nu.String()
		}
	}
	return out, nil
}

// nextLink returns the URL of rel="next" in a Link header.
func nextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		seg := strings.Split(part, ";")
		if len(seg) < 2 {
			continue
		}
		target := strings.TrimSpace(seg[0])
		if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		for _, p := range seg[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "rel") && strings.Trim(v, `"`) == "next" {
				return target[1 : len(target)-1]
			}
		}
	}
	return ""
}
