package verify

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Provider is a service whose credentials can be verified: its name (as
// MLWARDEN_VERIFY_ENDPOINTS names it), the HTTPS base URL every call goes
// to, and the documentation of the endpoint that is called.
type Provider struct {
	Name  string
	Title string
	Base  string
	Docs  string
}

// providers is the fixed allow-list of where credentials may be sent: each
// kind goes to its own provider's base URL and nowhere else.
var providers = []Provider{
	{"huggingface", "Hugging Face", "https://huggingface.co", "https://huggingface.co/docs/hub/api"},
	{"wandb", "Weights & Biases", "https://api.wandb.ai", "https://docs.wandb.ai/ref/python/public-api/api/"},
	{"openai", "OpenAI", "https://api.openai.com", "https://platform.openai.com/docs/api-reference/models/list"},
	{"anthropic", "Anthropic", "https://api.anthropic.com", "https://docs.anthropic.com/en/api/models-list"},
	{"replicate", "Replicate", "https://api.replicate.com", "https://replicate.com/docs/reference/http#account.get"},
	{"groq", "Groq", "https://api.groq.com", "https://console.groq.com/docs/api-reference#models-list"},
	{"cohere", "Cohere", "https://api.cohere.com", "https://docs.cohere.com/reference/check-api-key"},
	{"nvidia", "NVIDIA NGC", "https://authn.nvidia.com", "https://docs.nvidia.com/ngc/gpu-cloud/ngc-user-guide/index.html#generating-api-key"},
	{"github", "GitHub", "https://api.github.com", "https://docs.github.com/en/rest/users/users#get-the-authenticated-user"},
	{"gitlab", "GitLab.com", "https://gitlab.com", "https://docs.gitlab.com/api/personal_access_tokens/#get-single-personal-access-token"},
	{"aws", "AWS STS", "https://sts.amazonaws.com", "https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html"},
	{"slack", "Slack", "https://hooks.slack.com", "https://api.slack.com/messaging/webhooks#handling_errors"},
	{"dockerhub", "Docker Hub", "https://hub.docker.com", "https://docs.docker.com/reference/api/hub/latest/operations/AuthCreateAccessToken/"},
}

// Providers lists the providers, in the order the docs table shows them.
func Providers() []Provider { return slices.Clone(providers) }

// ProviderNames lists the providers' names.
func ProviderNames() []string {
	out := make([]string, len(providers))
	for i, p := range providers {
		out[i] = p.Name
	}
	return out
}

func titleOf(provider string) string {
	for _, p := range providers {
		if p.Name == provider {
			return p.Title
		}
	}
	return provider
}

// kind is one kind of credential: the provider it belongs to and how to
// ask about it. check is nil for a kind the provider offers no way to
// check (noCall says why); skip, when set, says why one credential is not
// asked about.
type kind struct {
	provider string
	title    string
	check    func(ctx context.Context, c *call, cred Credential) Answer
	noCall   string
	skipFn   func(Credential) string
}

func (k *kind) skip(c Credential) string {
	if k.skipFn == nil {
		return ""
	}
	return k.skipFn(c)
}

func newKind(provider string, check func(context.Context, *call, Credential) Answer) *kind {
	return &kind{provider: provider, title: titleOf(provider), check: check}
}

var (
	kindHF        = newKind("huggingface", checkHuggingFace)
	kindWandb     = &kind{provider: "wandb", title: titleOf("wandb"), check: checkWandb, skipFn: wandbServerKey}
	kindOpenAI    = newKind("openai", bearerModels("/v1/models"))
	kindAnthropic = newKind("anthropic", checkAnthropic)
	kindAnthAdmin = newKind("anthropic", checkAnthropicAdmin)
	kindReplicate = newKind("replicate", checkReplicate)
	kindGroq      = newKind("groq", bearerModels("/openai/v1/models"))
	kindCohere    = newKind("cohere", checkCohere)
	kindNVIDIA    = newKind("nvidia", checkNGC)
	kindGitHub    = newKind("github", checkGitHub)
	kindGitLab    = newKind("gitlab", checkGitLab)
	kindAWS       = &kind{provider: "aws", title: titleOf("aws"), check: checkAWS, skipFn: awsSkip}
	kindSlack     = &kind{provider: "slack", title: titleOf("slack"),
		noCall: "Slack documents no way to check an incoming webhook without posting to it, so it was not called"}
	kindDockerHub = &kind{provider: "dockerhub", title: titleOf("dockerhub"), check: checkDockerHub, skipFn: func(c Credential) string {
		if c.User == "" {
			return "Docker Hub checks a token only with its account name, which is not next to it"
		}
		return ""
	}}
)

// rules maps the secrets check's rule IDs to the kinds they find.
var rules = map[string]*kind{
	"secrets/huggingface-token":        kindHF,
	"secrets/huggingface-org-token":    kindHF,
	"secrets/huggingface-legacy-token": kindHF,
	"secrets/wandb-api-key":            kindWandb,
	"secrets/wandb-api-key-legacy":     kindWandb,
	"secrets/openai-api-key":           kindOpenAI,
	"secrets/anthropic-api-key":        kindAnthropic,
	"secrets/anthropic-admin-api-key":  kindAnthAdmin,
	"secrets/replicate-api-token":      kindReplicate,
	"secrets/groq-api-key":             kindGroq,
	"secrets/cohere-api-key":           kindCohere,
	"secrets/nvidia-api-key":           kindNVIDIA,
	"secrets/ngc-api-key":              kindNVIDIA,
	"secrets/github-pat":               kindGitHub,
	"secrets/github-oauth":             kindGitHub,
	"secrets/github-app-token":         kindGitHub,
	"secrets/github-fine-grained-pat":  kindGitHub,
	"secrets/gitlab-pat":               kindGitLab,
	"secrets/gitlab-pat-routable":      kindGitLab,
	"secrets/slack-webhook-url":        kindSlack,
	"secrets/dockerhub-pat":            kindDockerHub,
	// AWS: RuleAWSKeyID and RuleAWSSecret, paired (aws.go).
}

// Rules lists the rule IDs whose findings are verified, sorted.
func Rules() []string {
	out := []string{RuleAWSKeyID, RuleAWSSecret, ruleDockerConfig}
	for id := range rules {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Supported reports whether findings of rule id are verified.
func Supported(id string) bool {
	return rules[id] != nil || id == RuleAWSKeyID || id == RuleAWSSecret || id == ruleDockerConfig
}

const ruleDockerConfig = "secrets/docker-config-auth"

// kindOf returns the kind of a finding and the credential to present.
func kindOf(f *scanners.Finding) (*kind, Credential, bool) {
	if f.RuleID == ruleDockerConfig {
		// A registry's "auth" is base64(user:password): verified only
		// when the password is a Docker Hub token, which is Docker Hub's
		// own and so may go to it; another registry's password is never
		// sent anywhere.
		raw, err := base64.StdEncoding.DecodeString(f.Secret)
		if err != nil {
			return nil, Credential{}, false
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok || !strings.HasPrefix(pass, "dckr_pat_") {
			return nil, Credential{}, false
		}
		return kindDockerHub, Credential{Token: pass, User: user}, true
	}
	k := rules[f.RuleID]
	if k == nil {
		return nil, Credential{}, false
	}
	return k, Credential{Token: f.Secret}, true
}

func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}, "Accept": {"application/json"}}
}

// ask sends a GET-like request and reads the answer as every provider
// gives it (common); a working credential's account is the answer's JSON
// string field name ("" for none).
func ask(ctx context.Context, c *call, method, path string, h http.Header, name string) Answer {
	r, err := c.do(ctx, method, path, h, "")
	a, done := common(r, err)
	if done || name == "" {
		return a
	}
	var m map[string]any
	decode(r, &m)
	a.Identity, _ = m[name].(string)
	return a
}

// decode reads a JSON answer into v; a body that does not parse leaves v
// as it was.
func decode(r *response, v any) { _ = json.Unmarshal(r.body, v) }

// checkHuggingFace: GET /api/whoami-v2 with the token as a bearer, the
// call `hf auth whoami` makes (Hub API reference,
// https://huggingface.co/docs/hub/api, "GET /api/whoami-v2": "Get
// username and organizations the user belongs to"). 200 answers the
// account ({"type": "user"|"org", "name": …}); 401 means the token is
// invalid or revoked.
func checkHuggingFace(ctx context.Context, c *call, cred Credential) Answer {
	return ask(ctx, c, http.MethodGet, "/api/whoami-v2", bearer(cred.Token), "name")
}

// wandbServerKey: a W&B Server key (local-…, vm-…) belongs to a
// self-hosted server that is not known here; W&B's cloud cannot answer
// for it.
func wandbServerKey(c Credential) string {
	if strings.HasPrefix(c.Token, "local-") || strings.HasPrefix(c.Token, "vm-") {
		return "a W&B Server key belongs to a self-hosted server, which is not known here"
	}
	return ""
}

// checkWandb: the viewer query of W&B's GraphQL API, which the Python
// SDK's wandb.Api().viewer runs (Public API reference,
// https://docs.wandb.ai/ref/python/public-api/api/, "viewer"): POST
// /graphql, HTTP basic auth with user "api" and the key as password (how
// `wandb login` presents it). A read-only query. 200 with a viewer is the
// key's user; 401, or a null viewer, means the key is not valid.
func checkWandb(ctx context.Context, c *call, cred Credential) Answer {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"},
		"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("api:"+cred.Token))}}
	r, err := c.do(ctx, http.MethodPost, "/graphql", h, `{"query":"query Viewer { viewer { username entity } }"}`)
	a, done := common(r, err)
	if done {
		return a
	}
	var out struct {
		Data struct {
			Viewer *struct{ Username, Entity string } `json:"viewer"`
		} `json:"data"`
	}
	decode(r, &out)
	if out.Data.Viewer == nil {
		return Answer{Status: scanners.VerificationRevoked, Reason: "no user for the key"}
	}
	a.Identity = out.Data.Viewer.Username
	return a
}

// bearerModels lists the models with the key as a bearer: OpenAI's "List
// models" (GET /v1/models,
// https://platform.openai.com/docs/api-reference/models/list) and Groq's,
// which is OpenAI-compatible (GET /openai/v1/models,
// https://console.groq.com/docs/api-reference#models-list). 200 is a
// working key; 401 ("invalid_api_key") a wrong or revoked one; 429 is a
// rate limit or exhausted quota, which says nothing either way. The
// answer names no account.
func bearerModels(path string) func(context.Context, *call, Credential) Answer {
	return func(ctx context.Context, c *call, cred Credential) Answer {
		return ask(ctx, c, http.MethodGet, path, bearer(cred.Token), "")
	}
}

func anthropicHeader(token string) http.Header {
	return http.Header{"X-Api-Key": {token}, "Anthropic-Version": {"2023-06-01"}, "Accept": {"application/json"}}
}

// checkAnthropic: "List Models" (GET /v1/models with x-api-key and
// anthropic-version, https://docs.anthropic.com/en/api/models-list).
// 200 is a working key; 401 (authentication_error) an invalid one; 429
// (rate_limit_error) and 529 (overloaded_error, "Errors",
// https://docs.anthropic.com/en/api/errors) say nothing.
func checkAnthropic(ctx context.Context, c *call, cred Credential) Answer {
	return ask(ctx, c, http.MethodGet, "/v1/models", anthropicHeader(cred.Token), "")
}

// checkAnthropicAdmin: an Admin API key reads its organisation (GET
// /v1/organizations/me, Admin API "Get Current Organization",
// https://docs.anthropic.com/en/api/admin-api/organization/get-me), which
// answers {"id", "type": "organization", "name"}; 401 as for other keys.
func checkAnthropicAdmin(ctx context.Context, c *call, cred Credential) Answer {
	return ask(ctx, c, http.MethodGet, "/v1/organizations/me", anthropicHeader(cred.Token), "name")
}

// checkReplicate: "Get the authenticated account" (GET /v1/account with
// the token as a bearer, https://replicate.com/docs/reference/http#account.get),
// which answers {"type": "user"|"organization", "username", "name"}; 401
// means the token is invalid.
func checkReplicate(ctx context.Context, c *call, cred Credential) Answer {
	return ask(ctx, c, http.MethodGet, "/v1/account", bearer(cred.Token), "username")
}

// checkCohere: "Check API key" (POST /v1/check-api-key with the key as a
// bearer, https://docs.cohere.com/reference/check-api-key): "Checks that
// the api key in the Authorization header is valid and active"; 200
// answers {"valid": bool, "organization_id", "owner_id"}, 401 an invalid
// key.
func checkCohere(ctx context.Context, c *call, cred Credential) Answer {
	r, err := c.do(ctx, http.MethodPost, "/v1/check-api-key", bearer(cred.Token), "")
	a, done := common(r, err)
	if done {
		return a
	}
	var out struct {
		Valid bool   `json:"valid"`
		Org   string `json:"organization_id"`
	}
	decode(r, &out)
	if !out.Valid {
		return Answer{Status: scanners.VerificationRevoked, Reason: "not valid and active"}
	}
	if out.Org != "" {
		a.Identity = "organization " + out.Org
	}
	return a
}

// checkNGC: NGC's token service, which exchanges an API key for a
// short-lived token as `docker login nvcr.io -u '$oauthtoken'` and the NGC
// CLI do (NGC user guide, "Generating Your NGC API Key" and the NGC API's
// authentication, https://docs.nvidia.com/ngc/gpu-cloud/ngc-user-guide/):
// GET /token?service=ngc with basic auth "$oauthtoken":KEY. Personal keys
// from build.nvidia.com (nvapi-…) are NGC keys too. 200 gives a token (a
// working key); 401 refuses the key.
func checkNGC(ctx context.Context, c *call, cred Credential) Answer {
	h := http.Header{"Accept": {"application/json"},
		"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("$oauthtoken:"+cred.Token))}}
	return ask(ctx, c, http.MethodGet, "/token?service=ngc", h, "")
}

// checkGitHub: "Get the authenticated user" (GET /user,
// https://docs.github.com/en/rest/users/users#get-the-authenticated-user):
// 200 answers the login; 401 "Bad credentials" a token that is wrong,
// expired or revoked. A GitHub App installation token authenticates but
// may not read /user: 403 "Resource not accessible by integration",
// which is a working token. A rate limit is 403 or 429 with
// x-ratelimit-remaining: 0 ("Rate limits for the REST API") and says
// nothing.
func checkGitHub(ctx context.Context, c *call, cred Credential) Answer {
	h := bearer(cred.Token)
	h.Set("Accept", "application/vnd.github+json")
	h.Set("X-GitHub-Api-Version", "2022-11-28")
	r, err := c.do(ctx, http.MethodGet, "/user", h, "")
	if err == nil && (r.status == http.StatusForbidden || r.status == http.StatusTooManyRequests) {
		if r.header.Get("X-Ratelimit-Remaining") == "0" || r.status == http.StatusTooManyRequests {
			return unknownf("rate limited (HTTP %d)", r.status)
		}
		return Answer{Status: scanners.VerificationLive, Reason: "authenticated, but may not read /user (an app token)"}
	}
	a, done := common(r, err)
	if done {
		return a
	}
	var u struct{ Login string }
	decode(r, &u)
	a.Identity = u.Login
	return a
}

// checkGitLab: "Get single personal access token" for the token itself
// (GET /api/v4/personal_access_tokens/self with PRIVATE-TOKEN,
// https://docs.gitlab.com/api/personal_access_tokens/#get-single-personal-access-token),
// which needs no scope and answers {"name", "active", "revoked",
// "user_id", …}; 401 is an invalid, expired or revoked token. Only
// GitLab.com is asked: a self-managed instance's token is unknown there
// and reads as revoked (docs/design/verification.md).
func checkGitLab(ctx context.Context, c *call, cred Credential) Answer {
	r, err := c.do(ctx, http.MethodGet, "/api/v4/personal_access_tokens/self", http.Header{"Private-Token": {cred.Token}}, "")
	a, done := common(r, err)
	if done {
		return a
	}
	var t struct {
		Name    string `json:"name"`
		Active  bool   `json:"active"`
		Revoked bool   `json:"revoked"`
	}
	decode(r, &t)
	if t.Revoked || !t.Active {
		return Answer{Status: scanners.VerificationRevoked, Reason: "inactive or revoked"}
	}
	if t.Name != "" {
		a.Identity = "token " + t.Name
	}
	return a
}

// checkDockerHub: "Create access token" (POST /v2/auth/token with
// {"identifier": user, "secret": token},
// https://docs.docker.com/reference/api/hub/latest/operations/AuthCreateAccessToken/),
// which returns a short-lived JWT for a working personal access token and
// 401 for a wrong one. It needs the account name, so only a token that a
// docker config.json pairs with its user is asked about.
func checkDockerHub(ctx context.Context, c *call, cred Credential) Answer {
	body, _ := json.Marshal(map[string]string{"identifier": cred.User, "secret": cred.Token})
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	a, done := common(c.do(ctx, http.MethodPost, "/v2/auth/token", h, string(body)))
	if !done {
		a.Identity = cred.User
	}
	return a
}
