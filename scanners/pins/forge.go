package pins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// ActionResolver returns the 40-hex commit that ref (a tag or branch) of
// the GitHub repository owner/repo points at now.
type ActionResolver func(ctx context.Context, ownerRepo, ref string) (string, error)

// ErrOffline is what a resolver returns when it may not use the network.
var ErrOffline = errors.New("cannot resolve offline")

// GitHubOption configures GitHubResolver.
type GitHubOption func(*githubResolver)

// WithGitHubAPI sets the API's base URL (GitHub Enterprise Server:
// https://HOST/api/v3; tests: a local server). The default is
// https://api.github.com.
func WithGitHubAPI(base string) GitHubOption {
	return func(g *githubResolver) { g.base = strings.TrimSuffix(base, "/") }
}

// WithGitHubToken authenticates the requests (a token raises the API's
// rate limit and reaches private repositories).
func WithGitHubToken(token string) GitHubOption {
	return func(g *githubResolver) { g.token = token }
}

// WithHTTPClient sets the client the resolver uses.
func WithHTTPClient(c *http.Client) GitHubOption {
	return func(g *githubResolver) { g.client = c }
}

type githubResolver struct {
	base, token string
	client      *http.Client
	mu          sync.Mutex
	cache       map[string]string
}

// GitHubResolver resolves action refs through GitHub's REST API
// (GET /repos/OWNER/REPO/commits/REF with the "sha" media type, which
// peels annotated tags to their commit). Results are cached.
func GitHubResolver(opts ...GitHubOption) ActionResolver {
	g := &githubResolver{base: "https://api.github.com", client: http.DefaultClient, cache: map[string]string{}}
	for _, o := range opts {
		o(g)
	}
	return g.resolve
}

func (g *githubResolver) resolve(ctx context.Context, ownerRepo, ref string) (string, error) {
	key := ownerRepo + "@" + ref
	g.mu.Lock()
	sha, ok := g.cache[key]
	g.mu.Unlock()
	if ok {
		return sha, nil
	}
	owner, repo, ok := strings.Cut(ownerRepo, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", fmt.Errorf("%q is not owner/repo", ownerRepo)
	}
	u := fmt.Sprintf("%s/repos/%s/%s/commits/%s", g.base, url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(ref))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/vnd.github.sha")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if g.token != "" {
		req.Header.Set("Authorization", "Bearer "+g.token)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", g.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("read answer for %s: %w", key, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s for %s", g.base, resp.Status, key)
	}
	sha = strings.TrimSpace(string(body))
	if !isHex(sha, 40) {
		return "", fmt.Errorf("%s answered %q for %s, not a commit", g.base, shorten(sha), key)
	}
	sha = strings.ToLower(sha)
	g.mu.Lock()
	g.cache[key] = sha
	g.mu.Unlock()
	return sha, nil
}

// actionRepo is the repository an action or reusable workflow lives in:
// the first two elements of owner/repo[/path].
func actionRepo(name string) (string, bool) {
	parts := strings.Split(name, "/")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}
