package verify

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
)

// fakeToken makes a token of prefix and n characters of alphabet from a
// seed: no format-valid credential is kept in the tree.
func fakeToken(seed uint64, prefix string, n int, alphabet string) string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := []byte(prefix)
	for range n {
		b = append(b, alphabet[r.IntN(len(alphabet))])
	}
	return string(b)
}

const (
	letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	alnum   = letters + "0123456789"
	hexa    = "0123456789abcdef"
)

// fakeProvider answers as one provider documents: accepts only its valid
// credential, presented its own way on its own path.
type fakeProvider struct {
	name   string
	rule   string
	cred   Credential
	wrong  Credential
	accept func(r *http.Request, body string, c Credential) bool
	answer string // the body of a success
	// identity is what the answer names.
	identity string
	// deny is how the provider refuses a credential (default 401).
	deny func(w http.ResponseWriter)
}

func bearerIs(r *http.Request, tok string) bool {
	return r.Header.Get("Authorization") == "Bearer "+tok
}

func basicIs(r *http.Request, user, pass string) bool {
	u, p, ok := r.BasicAuth()
	return ok && u == user && p == pass
}

func fakes() []fakeProvider {
	hf := func(s uint64) Credential { return Credential{Token: fakeToken(s, "hf_", 34, letters)} }
	gh := func(s uint64) Credential { return Credential{Token: fakeToken(s, "ghp_", 36, alnum)} }
	aws := func(s uint64) Credential {
		return Credential{KeyID: fakeToken(s, "AKIA", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), Token: fakeToken(s+1, "", 40, alnum+"/+")}
	}
	get := func(path string, ok func(*http.Request, Credential) bool) func(*http.Request, string, Credential) bool {
		return func(r *http.Request, _ string, c Credential) bool {
			return r.Method == http.MethodGet && r.URL.Path == path && ok(r, c)
		}
	}
	bearerGet := func(path string) func(*http.Request, string, Credential) bool {
		return get(path, func(r *http.Request, c Credential) bool { return bearerIs(r, c.Token) })
	}
	return []fakeProvider{
		{name: "huggingface", rule: "secrets/huggingface-token", cred: hf(1), wrong: hf(2),
			accept: bearerGet("/api/whoami-v2"), answer: `{"type":"user","name":"alice","orgs":[]}`, identity: "alice"},
		{name: "wandb", rule: "secrets/wandb-api-key", cred: Credential{Token: fakeToken(3, "wandb_v1_", 27, alnum) + "_" + fakeToken(4, "", 49, alnum)},
			wrong: Credential{Token: fakeToken(5, "", 40, hexa)},
			accept: func(r *http.Request, body string, c Credential) bool {
				return r.Method == http.MethodPost && r.URL.Path == "/graphql" && basicIs(r, "api", c.Token) && strings.Contains(body, "viewer")
			}, answer: `{"data":{"viewer":{"username":"bob","entity":"bob-team"}}}`, identity: "bob"},
		{name: "openai", rule: "secrets/openai-api-key", cred: Credential{Token: fakeToken(6, "sk-proj-", 74, alnum) + "T3BlbkFJ" + fakeToken(7, "", 74, alnum)},
			wrong:  Credential{Token: fakeToken(8, "sk-proj-", 74, alnum) + "T3BlbkFJ" + fakeToken(9, "", 74, alnum)},
			accept: bearerGet("/v1/models"), answer: `{"object":"list","data":[]}`},
		{name: "anthropic", rule: "secrets/anthropic-api-key", cred: Credential{Token: fakeToken(10, "sk-ant-api03-", 93, alnum) + "AA"},
			wrong: Credential{Token: fakeToken(11, "sk-ant-api03-", 93, alnum) + "AA"},
			accept: get("/v1/models", func(r *http.Request, c Credential) bool {
				return r.Header.Get("X-Api-Key") == c.Token && r.Header.Get("Anthropic-Version") != ""
			}), answer: `{"data":[]}`,
			deny: func(w http.ResponseWriter) {
				http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, http.StatusUnauthorized)
			}},
		{name: "anthropic", rule: "secrets/anthropic-admin-api-key", cred: Credential{Token: fakeToken(12, "sk-ant-admin01-", 93, alnum) + "AA"},
			wrong:  Credential{Token: fakeToken(13, "sk-ant-admin01-", 93, alnum) + "AA"},
			accept: get("/v1/organizations/me", func(r *http.Request, c Credential) bool { return r.Header.Get("X-Api-Key") == c.Token }),
			answer: `{"id":"o1","type":"organization","name":"Acme ML"}`, identity: "Acme ML"},
		{name: "replicate", rule: "secrets/replicate-api-token", cred: Credential{Token: fakeToken(14, "r8_", 37, alnum)}, wrong: Credential{Token: fakeToken(15, "r8_", 37, alnum)},
			accept: bearerGet("/v1/account"), answer: `{"type":"user","username":"carol","name":"Carol"}`, identity: "carol"},
		{name: "groq", rule: "secrets/groq-api-key", cred: Credential{Token: fakeToken(16, "gsk_", 52, alnum)}, wrong: Credential{Token: fakeToken(17, "gsk_", 52, alnum)},
			accept: bearerGet("/openai/v1/models"), answer: `{"object":"list","data":[]}`},
		{name: "cohere", rule: "secrets/cohere-api-key", cred: Credential{Token: fakeToken(18, "", 40, alnum)}, wrong: Credential{Token: fakeToken(19, "", 40, alnum)},
			accept: func(r *http.Request, _ string, c Credential) bool {
				return r.Method == http.MethodPost && r.URL.Path == "/v1/check-api-key" && bearerIs(r, c.Token)
			}, answer: `{"valid":true,"organization_id":"org-7","owner_id":"u-1"}`, identity: "organization org-7"},
		{name: "nvidia", rule: "secrets/nvidia-api-key", cred: Credential{Token: fakeToken(20, "nvapi-", 64, alnum)}, wrong: Credential{Token: fakeToken(21, "nvapi-", 64, alnum)},
			accept: func(r *http.Request, _ string, c Credential) bool {
				return r.URL.Path == "/token" && r.URL.Query().Get("service") == "ngc" && basicIs(r, "$oauthtoken", c.Token)
			}, answer: `{"token":"eyJ.x.y","expires_in":300}`},
		{name: "github", rule: "secrets/github-pat", cred: gh(22), wrong: gh(23),
			accept: get("/user", func(r *http.Request, c Credential) bool { return bearerIs(r, c.Token) }),
			answer: `{"login":"octo-dave","id":1}`, identity: "octo-dave",
			deny: func(w http.ResponseWriter) {
				http.Error(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`, http.StatusUnauthorized)
			}},
		{name: "gitlab", rule: "secrets/gitlab-pat", cred: Credential{Token: fakeToken(24, "glpat-", 20, alnum)}, wrong: Credential{Token: fakeToken(25, "glpat-", 20, alnum)},
			accept: get("/api/v4/personal_access_tokens/self", func(r *http.Request, c Credential) bool { return r.Header.Get("Private-Token") == c.Token }),
			answer: `{"id":4,"name":"ci-token","revoked":false,"active":true,"user_id":42,"scopes":["read_api"]}`, identity: "token ci-token"},
		{name: "aws", rule: RuleAWSKeyID, cred: aws(26), wrong: Credential{KeyID: aws(26).KeyID, Token: aws(28).Token},
			accept: awsAccept, answer: `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/eve</Arn><UserId>AIDA</UserId><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`,
			identity: "arn:aws:iam::123456789012:user/eve",
			deny: func(w http.ResponseWriter) {
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `<ErrorResponse><Error><Type>Sender</Type><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error></ErrorResponse>`)
			}},
		{name: "dockerhub", rule: ruleDockerConfig, cred: Credential{User: "frank", Token: fakeToken(29, "dckr_pat_", 27, alnum)}, wrong: Credential{User: "frank", Token: fakeToken(30, "dckr_pat_", 27, alnum)},
			accept: func(r *http.Request, body string, c Credential) bool {
				return r.Method == http.MethodPost && r.URL.Path == "/v2/auth/token" && strings.Contains(body, `"identifier":"`+c.User+`"`) && strings.Contains(body, `"secret":"`+c.Token+`"`)
			}, answer: `{"access_token":"eyJ.a.b"}`, identity: "frank"},
	}
}

// awsAccept checks a GetCallerIdentity request as STS does: it signs the
// same request again with the valid secret and compares.
func awsAccept(r *http.Request, body string, c Credential) bool {
	if r.Method != http.MethodPost || r.URL.Path != "/" || body != stsBody {
		return false
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return false
	}
	again, _ := http.NewRequest(http.MethodPost, "http://"+r.Host+"/", strings.NewReader(body))
	again.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	again.Header.Set("User-Agent", r.Header.Get("User-Agent"))
	if err := signV4(context.Background(), again, c, body, "sts", "us-east-1", at); err != nil {
		return false
	}
	return again.Header.Get("Authorization") == r.Header.Get("Authorization")
}

// findingsOf is what the secrets check reports for cred.
func findingsOf(p fakeProvider, c Credential) []scanners.Finding {
	base := scanners.Finding{Check: "secrets", Severity: scanners.SeverityCritical, Message: "A token.", Target: "repo", Path: "train.py", Line: 3}
	switch p.rule {
	case RuleAWSKeyID:
		id, sec := base, base
		id.RuleID, id.Secret = RuleAWSKeyID, c.KeyID
		sec.RuleID, sec.Secret, sec.Line = RuleAWSSecret, c.Token, 4
		return []scanners.Finding{id, sec}
	case ruleDockerConfig:
		base.RuleID, base.Secret = p.rule, base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Token))
		return []scanners.Finding{base}
	}
	base.RuleID, base.Secret = p.rule, c.Token
	return []scanners.Finding{base}
}

// serve runs p on loopback in mode: "" answers as documented; the others
// are what can go wrong.
func serve(t testing.TB, p fakeProvider, mode string, other string, calls *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		switch mode {
		case "ratelimit":
			w.Header().Set("Retry-After", "30")
			http.Error(w, `{"error":"rate limited"}`, http.StatusTooManyRequests)
			return
		case "5xx":
			http.Error(w, "upstream down", http.StatusServiceUnavailable)
			return
		case "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			return
		case "redirect":
			http.Redirect(w, r, other+r.URL.Path, http.StatusFound)
			return
		case "latency":
			time.Sleep(50 * time.Millisecond)
		}
		if !p.accept(r, string(body), p.cred) {
			if p.deny != nil {
				p.deny(w)
				return
			}
			http.Error(w, `{"error":"invalid token"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, p.answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func newVerifier(t testing.TB, endpoints map[string]string, o Options) *Verifier {
	t.Helper()
	eps := []string{}
	for k, v := range endpoints {
		eps = append(eps, k+"="+v)
	}
	parsed, err := ParseEndpoints(strings.Join(eps, ","))
	if err != nil {
		t.Fatal(err)
	}
	o.Endpoints = parsed
	v, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

// TestProviders: every provider's fake, answering as its documentation
// says, for a valid credential (live, with the account), a wrong one
// (revoked), a rate limit, a server error, a slow answer and a redirect
// to another host (unknown, the other host never asked); one call each;
// and the secret in no message.
func TestProviders(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	for _, p := range fakes() {
		for _, tc := range []struct {
			mode, want, reason string
			wrong              bool
		}{
			{mode: "", want: scanners.VerificationLive},
			{mode: "", wrong: true, want: scanners.VerificationRevoked},
			{mode: "ratelimit", want: scanners.VerificationUnknown, reason: "rate limited"},
			{mode: "5xx", want: scanners.VerificationUnknown, reason: "HTTP 503"},
			{mode: "slow", want: scanners.VerificationUnknown, reason: "no answer within"},
			{mode: "redirect", want: scanners.VerificationUnknown, reason: "redirect"},
		} {
			name := fmt.Sprintf("%s/%s/%s/wrong=%v", p.name, p.rule, tc.mode, tc.wrong)
			t.Run(name, func(t *testing.T) {
				var calls atomic.Int64
				url := serve(t, p, tc.mode, other.URL, &calls)
				v := newVerifier(t, map[string]string{p.name: url}, Options{Timeout: 300 * time.Millisecond})
				cred := p.cred
				if tc.wrong {
					cred = p.wrong
				}
				fs := findingsOf(p, cred)
				st := v.Verify(context.Background(), fs)
				if st.Calls != 1 || calls.Load() != 1 {
					t.Errorf("%d calls (%d answered), want 1", st.Calls, calls.Load())
				}
				for _, f := range fs {
					if f.Verification != tc.want {
						t.Errorf("%s: verification %q, want %q: %s", f.RuleID, f.Verification, tc.want, f.Message)
					}
					if tc.reason != "" && !strings.Contains(f.Message, tc.reason) {
						t.Errorf("message %q does not say %q", f.Message, tc.reason)
					}
					if tc.want == scanners.VerificationLive && p.identity != "" && !strings.Contains(f.Message, "(account: "+p.identity+")") {
						t.Errorf("message %q does not name %q", f.Message, p.identity)
					}
					for _, sec := range []string{cred.Token, cred.KeyID} {
						if sec != "" && strings.Contains(f.Message, sec) {
							t.Errorf("the secret is in the message: %s", f.Message)
						}
					}
				}
			})
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("a redirect was followed to another host %d times", n)
	}
}

// TestNoCallKinds: Slack webhooks (no documented check without posting),
// a Docker Hub token without its account, a W&B Server key, half an AWS
// pair and a temporary AWS key are unknown without any call.
func TestNoCallKinds(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	eps := map[string]string{}
	for _, n := range ProviderNames() {
		eps[n] = srv.URL
	}
	v := newVerifier(t, eps, Options{})
	at := func(rule, secret, path string) scanners.Finding {
		return scanners.Finding{RuleID: rule, Secret: secret, Target: "t", Path: path, Message: "m."}
	}
	fs := []scanners.Finding{
		at("secrets/slack-webhook-url", "https://hooks.slack.com/services/T0/B0/"+fakeToken(40, "", 24, alnum), "a"),
		at("secrets/dockerhub-pat", fakeToken(41, "dckr_pat_", 27, alnum), "b"),
		at("secrets/wandb-api-key-legacy", fakeToken(42, "local-", 40, hexa), "c"),
		at(RuleAWSKeyID, fakeToken(43, "AKIA", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), "d"),
		at(RuleAWSSecret, fakeToken(44, "", 40, alnum), "e"),
		at(RuleAWSKeyID, fakeToken(45, "ASIA", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), "f"),
		at(RuleAWSSecret, fakeToken(46, "", 40, alnum), "f"),
		at(ruleDockerConfig, base64.StdEncoding.EncodeToString([]byte("u:hunter2-not-a-hub-token")), "g"),
		at("secrets/generic-api-key", fakeToken(47, "", 32, alnum), "h"),
	}
	v.Verify(context.Background(), fs)
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls, want none", n)
	}
	for _, f := range fs[:7] {
		if f.Verification != scanners.VerificationUnknown {
			t.Errorf("%s %s: %q, want unknown: %s", f.RuleID, f.Path, f.Verification, f.Message)
		}
	}
	for _, f := range fs[7:] {
		if f.Verification != "" {
			t.Errorf("%s: verified (%q), but is not a supported kind", f.RuleID, f.Verification)
		}
	}
}

// TestCache: one call per distinct secret, however many findings hold it;
// none the next time, from the cache; again once the answer is older than
// the TTL; never an unknown answer kept.
func TestCache(t *testing.T) {
	p := fakes()[0]
	var calls atomic.Int64
	url := serve(t, p, "", "", &calls)
	c := cache.New(cache.NewFS(t.TempDir(), -1, -1), cache.BackendFS, cache.Options{})
	now := time.Unix(1_800_000_000, 0)
	o := Options{Cache: c, TTL: time.Hour, Now: func() time.Time { return now }}
	v := newVerifier(t, map[string]string{p.name: url}, o)
	fs := append(findingsOf(p, p.cred), findingsOf(p, p.cred)...)
	fs[1].Path = "eval.py"
	fs = append(fs, findingsOf(p, p.wrong)...)
	st := v.Verify(context.Background(), fs)
	if st.Calls != 2 || st.Distinct != 2 || calls.Load() != 2 {
		t.Fatalf("first: %+v, %d answered; want 2 calls for 2 distinct secrets", st, calls.Load())
	}
	fs2 := slicesClone(fs)
	st = v.Verify(context.Background(), fs2)
	if st.Calls != 0 || st.Cached != 2 {
		t.Errorf("second: %+v; want 0 calls, 2 cached", st)
	}
	if fs2[0].Verification != scanners.VerificationLive || fs2[2].Verification != scanners.VerificationRevoked {
		t.Errorf("cached answers: %q %q", fs2[0].Verification, fs2[2].Verification)
	}
	now = now.Add(2 * time.Hour)
	if st = v.Verify(context.Background(), slicesClone(fs)); st.Calls != 2 {
		t.Errorf("after the TTL: %+v; want 2 calls", st)
	}
}

func slicesClone(fs []scanners.Finding) []scanners.Finding {
	out := make([]scanners.Finding, len(fs))
	copy(out, fs)
	for i := range out {
		out[i].Verification, out[i].Message = "", "A token."
	}
	return out
}

// TestUnreachable: a provider that refuses connections is unknown, and the
// error says so without the secret or the URL.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p := fakes()[0]
	v := newVerifier(t, map[string]string{"huggingface": url}, Options{Timeout: time.Second})
	fs := findingsOf(p, p.cred)
	v.Verify(context.Background(), fs)
	if fs[0].Verification != scanners.VerificationUnknown || !strings.Contains(fs[0].Message, "could not reach") {
		t.Errorf("%q: %s", fs[0].Verification, fs[0].Message)
	}
	if strings.Contains(fs[0].Message, p.cred.Token) || strings.Contains(fs[0].Message, url) {
		t.Errorf("message holds the secret or the URL: %s", fs[0].Message)
	}
}

// TestParseEndpoints: only loopback IP addresses, without a path; a name
// is never resolved.
func TestParseEndpoints(t *testing.T) {
	good := "huggingface=http://127.0.0.1:8080,github=http://[::1]:9/,aws=https://127.0.0.2:443"
	m, err := ParseEndpoints(good)
	if err != nil || m["github"] != "http://[::1]:9" || len(m) != 3 {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{
		"huggingface=https://huggingface.co",
		"github=http://localhost:8080",
		"github=http://10.1.2.3:80",
		"github=http://169.254.169.254",
		"github=http://0.0.0.0:80",
		"github=http://127.0.0.1:80/api/v3",
		"github=http://user:pw@127.0.0.1:80",
		"github=ftp://127.0.0.1",
		"nosuch=http://127.0.0.1:1",
		"github",
	} {
		if _, err := ParseEndpoints(bad); err == nil || !strings.Contains(err.Error(), EnvEndpoints) {
			t.Errorf("%s: %v, want an error naming %s", bad, err, EnvEndpoints)
		}
	}
	if _, err := New(Options{Endpoints: map[string]string{"github": "https://api.example.com"}}); err == nil {
		t.Error("New took a non-loopback endpoint")
	}
}

// TestSigV4Vector: the signer gives the AWS Signature Version 4 test
// suite's get-vanilla signature (aws-sig-v4-test-suite, get-vanilla).
func TestSigV4Vector(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://example.amazonaws.com/", nil)
	at := time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)
	// The suite's documented example key pair.
	c := Credential{KeyID: "AKIDEXAMPLE", Token: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	if err := signV4(context.Background(), req, c, "", "service", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
	if got := req.Header.Get("Authorization"); got != want {
		t.Errorf("Authorization:\n got %s\nwant %s", got, want)
	}
}

// TestAWSPairs: a key id goes with the nearest secret of the same file,
// never with one of another file.
func TestAWSPairs(t *testing.T) {
	f := func(rule, secret, path string, line int) scanners.Finding {
		return scanners.Finding{RuleID: rule, Secret: secret, Target: "t", Path: path, Line: line}
	}
	fs := []scanners.Finding{
		f(RuleAWSKeyID, "ID1", "a", 1), f(RuleAWSSecret, "S1", "a", 2),
		f(RuleAWSKeyID, "ID2", "a", 40), f(RuleAWSSecret, "S2", "a", 41),
		f(RuleAWSKeyID, "ID3", "b", 1), f(RuleAWSSecret, "S3", "c", 1),
	}
	got := map[string]string{}
	for _, p := range awsPairs(fs) {
		got[p.cred.KeyID+"|"+p.cred.Token] = fmt.Sprint(p.findings)
	}
	want := map[string]string{"ID1|S1": "[0 1]", "ID2|S2": "[2 3]", "ID3|": "[4]", "|S3": "[5]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pairs %v, want %v", got, want)
	}
}

// TestLatency measures, against a loopback Hugging Face fake that takes
// 50 ms to answer, the time verification adds per live secret: alone, and
// for 16 distinct secrets with the default concurrency (the figure of
// docs/design/verification.md; go test -run Latency -v).
func TestLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	p := fakes()[0]
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond)
		io.WriteString(w, p.answer)
	}))
	defer srv.Close()
	c := cache.New(cache.NewFS(t.TempDir(), -1, -1), cache.BackendFS, cache.Options{})
	v := newVerifier(t, map[string]string{"huggingface": srv.URL}, Options{Cache: c})
	var fs []scanners.Finding
	for i := range 16 {
		fs = append(fs, findingsOf(p, Credential{Token: fakeToken(uint64(100+i), "hf_", 34, letters)})...)
	}
	start := time.Now()
	v.Verify(context.Background(), fs[:1])
	one := time.Since(start)
	start = time.Now()
	st := v.Verify(context.Background(), fs[1:])
	many := time.Since(start)
	start = time.Now()
	cached := v.Verify(context.Background(), slicesClone(fs))
	again := time.Since(start)
	t.Logf("one live secret: %v; 15 more at concurrency %d: %v (%v a secret); all 16 again from the cache: %v, %d calls",
		one.Round(time.Millisecond), DefaultConcurrency, many.Round(time.Millisecond), (many / 15).Round(time.Millisecond), again.Round(time.Millisecond), cached.Calls)
	if st.Calls != 15 || cached.Calls != 0 || calls.Load() != 16 {
		t.Errorf("calls: %d then %d (server %d)", st.Calls, cached.Calls, calls.Load())
	}
	if one < 50*time.Millisecond {
		t.Errorf("one call took %v, under the fake's latency", one)
	}
}

// BenchmarkVerifyLive50ms: the time one live secret adds against a fake
// with 50 ms latency, cache miss (SecretKey, call, store).
func BenchmarkVerifyLive50ms(b *testing.B) {
	p := fakes()[0]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		io.WriteString(w, p.answer)
	}))
	defer srv.Close()
	c := cache.New(cache.NewFS(b.TempDir(), -1, -1), cache.BackendFS, cache.Options{})
	v := newVerifier(b, map[string]string{"huggingface": srv.URL}, Options{Cache: c})
	i := uint64(0)
	for b.Loop() {
		i++
		v.Verify(context.Background(), findingsOf(p, Credential{Token: fakeToken(1000+i, "hf_", 34, letters)}))
	}
}
