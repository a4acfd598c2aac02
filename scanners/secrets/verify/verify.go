// Package verify asks a leaked credential's provider whether it still works
// (--verify-secrets): for each distinct secret of a supported kind, one
// read-only call to the provider's own HTTPS API, whose answer makes the
// finding live, revoked or unknown, with the account it belongs to where
// the answer names one.
//
// What it may do is fixed here, never by what is scanned: the endpoint of
// each kind is in the providers table (a URL in the scanned content is
// never called), redirects are not followed, calls are bounded in number
// (Options.Concurrency) and time (Options.Timeout), and answers are kept in
// the result cache under a salted, slow hash of the secret
// (scanners.SecretKey), so that a secret is asked about once per cache
// lifetime. Nothing leaves the machine unless a caller builds a Verifier;
// the pipeline does only with --verify-secrets. The secret is never written
// into an answer, an error or a warning. docs/design/verification.md has
// the providers, their documentation and the safety rules.
package verify

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"golang.org/x/sync/errgroup"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
)

// Defaults.
const (
	// DefaultTimeout bounds one provider call.
	DefaultTimeout = 10 * time.Second
	// DefaultConcurrency is how many calls run at once.
	DefaultConcurrency = 4
	// maxBody bounds an answer read.
	maxBody = 64 << 10
	// cacheVersion keys the cached answers: a change of how answers are
	// read asks again.
	cacheVersion = "v1"
)

// Options configures a Verifier.
type Options struct {
	// Timeout bounds one call, connection included (default
	// DefaultTimeout); past it the finding is unknown.
	Timeout time.Duration
	// Concurrency bounds the calls at once (default DefaultConcurrency).
	Concurrency int
	// Cache keeps answers by the secret's salted hash (nil: none kept).
	Cache *cache.Cache
	// TTL is how long a live or revoked answer is trusted, from when it
	// was given (not renewed by reading it; 0: cache.DefaultTTL; negative:
	// forever). Unknown answers are never kept.
	TTL time.Duration
	// Endpoints replaces providers' base URLs, by provider name (tests
	// only: ParseEndpoints refuses any that is not loopback).
	Endpoints map[string]string
	// Transport, when set, carries the calls instead of a transport with
	// the environment's proxy (tests).
	Transport http.RoundTripper
	// Now is the time answers are dated with (default time.Now).
	Now func() time.Time
}

// Answer is what a provider said of one credential.
type Answer struct {
	// Status is scanners.VerificationLive, VerificationRevoked or
	// VerificationUnknown.
	Status string `json:"status"`
	// Identity names the account the credential belongs to (a user, an
	// organisation, an ARN), when the answer gives one; never a secret.
	Identity string `json:"identity,omitempty"`
	// Reason says why an answer is unknown, or qualifies another.
	Reason string `json:"reason,omitempty"`
	// At is when the provider answered (Unix seconds).
	At int64 `json:"at"`
}

// Credential is what one call presents.
type Credential struct {
	// Token is the secret: a token, an API key, AWS's secret access key.
	Token string
	// KeyID is AWS's access key id, which goes with Token.
	KeyID string
	// User is the account a Docker Hub token belongs to.
	User string
}

// Stats counts what a Verifier did.
type Stats struct {
	// Calls are requests sent to providers.
	Calls int64
	// Cached are answers taken from the cache instead.
	Cached int64
	// Distinct are the distinct credentials asked about.
	Distinct int64
}

// Verifier asks providers. It is safe for concurrent use.
type Verifier struct {
	o      Options
	client *http.Client
	bases  map[string]string
	calls  atomic.Int64
	cached atomic.Int64
}

// New returns a Verifier. An endpoint override that is not a loopback URL,
// or that names no provider, is an error.
func New(o Options) (*Verifier, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.TTL == 0 {
		o.TTL = cache.DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	bases := map[string]string{}
	for _, p := range providers {
		bases[p.Name] = p.Base
	}
	for name, u := range o.Endpoints {
		if _, ok := bases[name]; !ok {
			return nil, fmt.Errorf("%s: unknown provider %q (valid: %s)", EnvEndpoints, name, strings.Join(ProviderNames(), ", "))
		}
		if err := loopbackURL(u); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", EnvEndpoints, name, err)
		}
		bases[name] = strings.TrimSuffix(u, "/")
	}
	tr := o.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: o.Timeout}).DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   o.Timeout,
			ResponseHeaderTimeout: o.Timeout,
			MaxIdleConnsPerHost:   o.Concurrency,
			IdleConnTimeout:       30 * time.Second,
		}
	}
	client := &http.Client{
		Transport: tr,
		Timeout:   o.Timeout,
		// No redirect is followed: an answer that sends us elsewhere is
		// no answer (unknown), and the credential goes nowhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Verifier{o: o, client: client, bases: bases}, nil
}

// Stats returns the counts so far.
func (v *Verifier) Stats() Stats {
	return Stats{Calls: v.calls.Load(), Cached: v.cached.Load()}
}

// Close releases idle connections.
func (v *Verifier) Close() { v.client.CloseIdleConnections() }

// job is one distinct credential to ask about, and the findings it answers.
type job struct {
	kind     *kind
	cred     Credential
	findings []int
	answer   Answer
}

// Verify asks about every finding of fs of a supported kind, once per
// distinct credential, and records the answers in the findings
// (Verification, and a sentence of the message). Findings of other kinds
// are left as they are. It returns what this call did.
func (v *Verifier) Verify(ctx context.Context, fs []scanners.Finding) Stats {
	jobs := v.plan(fs)
	before := v.Stats()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(v.o.Concurrency)
	for _, j := range jobs {
		g.Go(func() error {
			j.answer = v.answer(ctx, j.kind, j.cred)
			return nil
		})
	}
	_ = g.Wait()
	for _, j := range jobs {
		for _, i := range j.findings {
			record(&fs[i], j.kind, j.answer, j.cred)
		}
	}
	after := v.Stats()
	return Stats{Calls: after.Calls - before.Calls, Cached: after.Cached - before.Cached, Distinct: int64(len(jobs))}
}

// plan groups the findings by credential: AWS key ids are paired with the
// secret access key nearest them in the same artifact.
func (v *Verifier) plan(fs []scanners.Finding) []*job {
	type key struct{ rule, id, token, user string }
	byKey := map[key]*job{}
	var out []*job
	add := func(k *kind, c Credential, idx ...int) {
		kk := key{k.provider, c.KeyID, c.Token, c.User}
		j := byKey[kk]
		if j == nil {
			j = &job{kind: k, cred: c}
			byKey[kk] = j
			out = append(out, j)
		}
		j.findings = append(j.findings, idx...)
	}
	for _, p := range awsPairs(fs) {
		add(kindAWS, p.cred, p.findings...)
	}
	for i := range fs {
		f := &fs[i]
		if f.Secret == "" || strings.HasPrefix(f.RuleID, awsRulePrefix) {
			continue
		}
		k, cred, ok := kindOf(f)
		if !ok {
			continue
		}
		add(k, cred, i)
	}
	return out
}

// answer returns the cached answer for cred, or asks.
func (v *Verifier) answer(ctx context.Context, k *kind, cred Credential) Answer {
	if k.check == nil {
		return Answer{Status: scanners.VerificationUnknown, Reason: k.noCall}
	}
	if reason := k.skip(cred); reason != "" {
		return Answer{Status: scanners.VerificationUnknown, Reason: reason}
	}
	id := cacheID(k.provider, cred)
	var a Answer
	if v.o.Cache.GetJSON(ctx, cache.KindVerification, cacheVersion, id, &a) && v.fresh(a) {
		v.cached.Add(1)
		return a
	}
	base := v.bases[k.provider]
	c := &call{client: v.client, base: base, secret: cred}
	v.calls.Add(1)
	a = k.check(ctx, c, cred)
	a.Identity = clean(a.Identity, cred)
	a.Reason = clean(a.Reason, cred)
	a.At = v.o.Now().Unix()
	if a.Status != scanners.VerificationUnknown {
		v.o.Cache.PutJSON(ctx, cache.KindVerification, cacheVersion, id, &a)
	}
	return a
}

// fresh reports whether a cached answer is younger than the TTL.
func (v *Verifier) fresh(a Answer) bool {
	if a.Status != scanners.VerificationLive && a.Status != scanners.VerificationRevoked {
		return false
	}
	if v.o.TTL < 0 {
		return true
	}
	return v.o.Now().Sub(time.Unix(a.At, 0)) < v.o.TTL
}

// cacheID is the cache id of a credential: the salted, memory-hard
// scanners.SecretKey of the provider and the secret, never the secret.
func cacheID(provider string, c Credential) string {
	return hex.EncodeToString(scanners.SecretKey("verify/"+provider, c.KeyID+"\x00"+c.User+"\x00"+c.Token))
}

// record writes the answer into the finding: its Verification, and one
// sentence at the end of the message.
func record(f *scanners.Finding, k *kind, a Answer, cred Credential) {
	f.Verification = a.Status
	var s string
	switch a.Status {
	case scanners.VerificationLive:
		s = "Verified live: " + k.title + " accepted it"
		if a.Identity != "" {
			s += " (account: " + a.Identity + ")"
		}
		s += "; revoke it now."
	case scanners.VerificationRevoked:
		s = "Verified revoked: " + k.title + " refused it"
		if a.Reason != "" {
			s += " (" + a.Reason + ")"
		}
		s += "."
	default:
		s = "Verification unknown: " + a.Reason + "."
	}
	f.Message = scrub(f.Message+" "+s, cred)
}

// clean keeps what may be shown of a provider's words: printable, at most
// 200 characters, and never the credential.
func clean(s string, c Credential) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return scrub(s, c)
}

// scrub replaces the credential's parts in s by their redacted form.
func scrub(s string, c Credential) string {
	for _, sec := range []string{c.Token, c.KeyID} {
		if len(sec) >= 6 {
			s = strings.ReplaceAll(s, sec, scanners.Redact(sec))
		}
	}
	return s
}

// call is one request to a provider's base URL, for one credential.
type call struct {
	client *http.Client
	base   string
	secret Credential
}

// response is a provider's answer, its body bounded.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends method path (the provider's own path) with header and body.
// Errors never hold the credential: they are reduced to what went wrong.
func (c *call) do(ctx context.Context, method, path string, header http.Header, body string) (*response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, errors.New("bad request")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", "mlwarden-verify")
	return c.send(req)
}

func (c *call) send(req *http.Request) (*response, error) {
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, netReason(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, netReason(err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// netReason reduces a transport error to a reason without the URL's
// query, the headers or anything else the request carried.
func netReason(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return errors.New("no answer within --verify-timeout")
	case errors.Is(err, context.Canceled):
		return errors.New("interrupted")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return fmt.Errorf("could not reach the provider (%s)", oe.Op)
	}
	return errors.New("could not reach the provider")
}

// unknownf is an unknown answer.
func unknownf(format string, args ...any) Answer {
	return Answer{Status: scanners.VerificationUnknown, Reason: fmt.Sprintf(format, args...)}
}

// common reads the answers every provider gives alike: 2xx live, 401
// revoked, 429 and 5xx unknown, a redirect unknown (not followed), and
// anything else unknown. ok is false for 2xx, which the caller reads.
func common(r *response, err error) (Answer, bool) {
	switch {
	case err != nil:
		return unknownf("%v", err), true
	case r.status >= 200 && r.status < 300:
		return Answer{Status: scanners.VerificationLive}, false
	case r.status == http.StatusUnauthorized:
		return Answer{Status: scanners.VerificationRevoked, Reason: "HTTP 401"}, true
	case r.status == http.StatusTooManyRequests:
		return unknownf("rate limited (HTTP 429)"), true
	case r.status >= 300 && r.status < 400:
		return unknownf("the provider answered with a redirect (HTTP %d), not followed", r.status), true
	case r.status >= 500:
		return unknownf("provider error (HTTP %d)", r.status), true
	}
	return unknownf("unexpected answer (HTTP %d)", r.status), true
}
