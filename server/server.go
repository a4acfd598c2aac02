//go:build !mlwarden_sbatch

// Package server is `mlwarden serve`: a Kubernetes validating admission
// webhook, a registry push listener and a Harbor pluggable-scanner adapter in
// front of one verdict store. Registries ask it on push (scan once, keep the
// verdict by digest); clusters ask it at admission (answer from that verdict).
// It holds no state apart from the verdict store, so it runs as replicas.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/mlwarden/mlwarden/scanners/signatures"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/server/verdict"
)

// ScanRequest names one image to scan, always by digest, and how to reach it.
type ScanRequest struct {
	Ref name.Digest
	// Auth authenticates to the registry; nil means the default keychain.
	Auth authn.Authenticator
}

// ImageScanner scans one image. The server owns queueing, deduplication,
// retries and storing the verdict; an ImageScanner only scans.
type ImageScanner interface {
	ScanImage(ctx context.Context, req ScanRequest) (*scanners.Result, error)
}

// SignatureVerifier checks an image's signature against the configured
// policy (the signatures check). A nil error means the image is trusted.
type SignatureVerifier interface {
	VerifyImage(ctx context.Context, ref name.Digest) error
}

// Server answers admission reviews, registry events and Harbor scans.
type Server struct {
	cfg          Config
	scanner      ImageScanner
	store        verdict.Store
	sigs         SignatureVerifier
	log          *slog.Logger
	rulesVersion string
	version      string
	scanTimeout  time.Duration
	remoteOpts   []remote.Option
	nameOpts     []name.Option
	insecure     []string
	now          func() time.Time
	eventsToken  string
	harborToken  string
	// guard refuses registries on internal addresses (guard.go); allow
	// adds to the config's allow-list when New builds it.
	guard *RegistryGuard
	allow []string

	// admit holds what decides an admission answer and can change at run
	// time (Reload); the rest of cfg is fixed for the server's life.
	admit atomic.Pointer[admitRules]

	metrics *metrics
	scans   *coordinator
	tags    *tagCache
	harbor  *harborScans
	ready   atomic.Bool
	mux     *http.ServeMux
}

// Option configures a Server.
type Option func(*Server)

// WithConfig sets the policies (default DefaultConfig()).
func WithConfig(c Config) Option { return func(s *Server) { s.cfg = c } }

// WithScanner sets what scans images. Without one, images with no verdict
// get the fallback answer.
func WithScanner(sc ImageScanner) Option { return func(s *Server) { s.scanner = sc } }

// WithStore sets the verdict store (default: in memory).
func WithStore(st verdict.Store) Option { return func(s *Server) { s.store = st } }

// ImagePolicyVerifier answers the signature question with the signatures
// check's image policy (signature-policy in the config): the same rules as
// `mlwarden scan` and `mlwarden verify image`, asked for every digest.
type ImagePolicyVerifier struct{ Policy *signatures.Scanner }

// VerifyImage implements SignatureVerifier.
func (v ImagePolicyVerifier) VerifyImage(ctx context.Context, d name.Digest) error {
	return v.Policy.VerifyImage(ctx, d.String())
}

// WithSignatureVerifier sets the signature check run at admission.
func WithSignatureVerifier(v SignatureVerifier) Option { return func(s *Server) { s.sigs = v } }

// WithLogger sets the structured logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithScanTimeout bounds each queued scan (0: no bound); inline admission
// scans are bounded by the config's scan-deadline.
func WithScanTimeout(d time.Duration) Option { return func(s *Server) { s.scanTimeout = d } }

// WithRulesVersion names the rule set verdicts are made under; verdicts
// made under another are not used.
func WithRulesVersion(v string) Option { return func(s *Server) { s.rulesVersion = v } }

// WithVersion is mlwarden's version, shown to Harbor.
func WithVersion(v string) Option { return func(s *Server) { s.version = v } }

// WithRemoteOptions sets how registries are reached to resolve tags
// (transport, keychain).
func WithRemoteOptions(o ...remote.Option) Option {
	return func(s *Server) { s.remoteOpts = append(s.remoteOpts, o...) }
}

// WithNameOptions sets how image references are parsed (name.Insecure for
// plain-HTTP registries, a default registry).
func WithNameOptions(o ...name.Option) Option {
	return func(s *Server) { s.nameOpts = append(s.nameOpts, o...) }
}

// WithInsecureRegistries names registry hosts reached over plain HTTP
// (loopback registries always are).
func WithInsecureRegistries(hosts ...string) Option {
	return func(s *Server) { s.insecure = append(s.insecure, hosts...) }
}

// WithAllowRegistries adds to the config's allow_registries: loopback and
// private registries the server may contact (--allow-registry).
func WithAllowRegistries(patterns ...string) Option {
	return func(s *Server) { s.allow = append(s.allow, patterns...) }
}

// WithRegistryGuard sets the guard every registry connection of the server
// goes through (default: one built from allow_registries and
// WithAllowRegistries). Give the same guard's DialContext to the image
// scanner (image.Options.Dial) and its Transport to the signature verifier
// and the referrers store, so that every request the server makes for an
// image is checked.
func WithRegistryGuard(g *RegistryGuard) Option { return func(s *Server) { s.guard = g } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// New returns a server. Call Start before serving and Close after.
func New(opts ...Option) (*Server, error) {
	s := &Server{
		cfg:          DefaultConfig(),
		log:          slog.New(slog.DiscardHandler),
		rulesVersion: "unversioned",
		version:      "dev",
		now:          time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	if err := s.cfg.Validate(); err != nil {
		return nil, err
	}
	if s.store == nil {
		s.store = verdict.NewMemory()
	}
	tok, err := s.cfg.Events.token()
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	s.eventsToken = tok
	if s.harborToken, err = s.cfg.Harbor.token(); err != nil {
		return nil, fmt.Errorf("harbor: %w", err)
	}
	if s.harborToken == "" {
		s.log.Info("the Harbor adapter is disabled: set serve.harbor.token, token-file or token-env to serve it")
	}
	if s.guard == nil {
		allow := append(slices.Clip(s.cfg.AllowRegistries), s.allow...)
		if s.guard, err = NewRegistryGuard(allow); err != nil {
			return nil, err
		}
	}
	// The guard's transport comes first, so that a test's own transport
	// (WithRemoteOptions) still replaces it.
	s.remoteOpts = append([]remote.Option{remote.WithTransport(s.guard.Transport())}, s.remoteOpts...)
	s.admit.Store(&admitRules{cfg: s.cfg, sigs: s.sigs})
	s.metrics = newMetrics()
	s.tags = newTagCache(s.cfg.TagTTL, s.now)
	s.scans = newCoordinator(s)
	s.harbor = newHarborScans(s)
	s.routes()
	return s, nil
}

// admitRules is the part of the configuration Reload replaces: the
// policies (default and per namespace) and the signature verifier.
type admitRules struct {
	cfg  Config
	sigs SignatureVerifier
}

// Reload replaces the admission policies (the top-level policy, namespaces)
// and the signature verifier (nil: none) while the server runs, as serve
// does on SIGHUP. Requests already being answered finish under the old ones.
// Everything else in c (listeners, store, workers, tokens, deadlines) takes
// a restart; Reload reports which of those differ so that the caller can
// say so. An invalid c changes nothing.
func (s *Server) Reload(c Config, sigs SignatureVerifier) (needRestart []string, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	old := s.cfg
	for _, f := range []struct {
		key  string
		same bool
	}{
		{"scan-deadline", c.ScanDeadline == old.ScanDeadline}, {"tag-ttl", c.TagTTL == old.TagTTL},
		{"events", c.Events == old.Events}, {"harbor", c.Harbor == old.Harbor},
		{"workers", c.Workers == old.Workers}, {"queue-size", c.QueueSize == old.QueueSize},
		{"retries", c.Retries == old.Retries && c.RetryBackoff == old.RetryBackoff}, {"store", c.Store == old.Store},
		{"allow_registries", slices.Equal(c.AllowRegistries, old.AllowRegistries)}, {"max-images", c.MaxImages == old.MaxImages},
	} {
		if !f.same {
			needRestart = append(needRestart, f.key)
		}
	}
	s.admit.Store(&admitRules{cfg: c, sigs: sigs})
	return needRestart, nil
}

// Handler returns the HTTP handler for every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// Start starts the scan workers; they stop when ctx is done or at Close.
func (s *Server) Start(ctx context.Context) {
	s.scans.start(ctx)
	s.ready.Store(true)
}

// Close stops taking work and waits for the scans in progress to end, or for
// ctx to be done.
func (s *Server) Close(ctx context.Context) error {
	s.ready.Store(false)
	return s.scans.stop(ctx)
}

// Verdict returns the kept verdict for ref (tests and tools).
func (s *Server) Verdict(ctx context.Context, ref name.Digest) (*verdict.Verdict, error) {
	return s.store.Get(ctx, ref, s.rulesVersion)
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	m.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	m.Handle("GET /metrics", s.metrics.handler())
	m.Handle("POST /admission", s.instrument("admission", http.HandlerFunc(s.serveAdmission)))
	m.Handle("POST /registry/events", s.instrument("events", http.HandlerFunc(s.serveEvents)))
	m.Handle("GET /api/v1/metadata", s.instrument("harbor_metadata", http.HandlerFunc(s.serveHarborMetadata)))
	m.Handle("POST /api/v1/scan", s.instrument("harbor_scan", http.HandlerFunc(s.serveHarborScan)))
	m.Handle("GET /api/v1/scan/{id}/report", s.instrument("harbor_report", http.HandlerFunc(s.serveHarborReport)))
	s.mux = m
}

// parseRef parses an image reference, marking registries listed as
// insecure.
func (s *Server) parseRef(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref, s.nameOpts...)
	if err != nil || !slices.Contains(s.insecure, r.Context().RegistryStr()) {
		return r, err
	}
	return name.ParseReference(ref, append(slices.Clip(s.nameOpts), name.Insecure)...)
}

// ListenConfig says where and how Run listens.
type ListenConfig struct {
	Addr string
	// CertFile and KeyFile serve HTTPS; the pair is re-read when it changes
	// on disk (cert-manager renews it in place).
	CertFile, KeyFile string
	// InsecureHTTP allows plain HTTP on a non-loopback address.
	InsecureHTTP bool
}

// ErrPlainHTTP is returned by Run for plain HTTP on a non-loopback address
// without InsecureHTTP.
var ErrPlainHTTP = errors.New("refusing plain HTTP on a non-loopback address: give --tls-cert/--tls-key, or --insecure-http")

// CheckListen validates a listen configuration before anything starts.
func CheckListen(lc ListenConfig) error {
	if (lc.CertFile == "") != (lc.KeyFile == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if lc.CertFile != "" || lc.InsecureHTTP {
		return nil
	}
	host, _, err := net.SplitHostPort(lc.Addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", lc.Addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return ErrPlainHTTP
}

// Run listens, serves until ctx is done, then shuts down gracefully: it
// stops accepting, lets requests in flight finish (up to 20 s) and waits for
// running scans. ready, if not nil, gets the bound address once listening.
func (s *Server) Run(ctx context.Context, lc ListenConfig, ready func(net.Addr)) error {
	if err := CheckListen(lc); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", lc.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{
		Handler: s.Handler(),
		// A slow or hostile client holds a connection for seconds, never
		// for good: headers within 5 s and at most 64 KiB (the API server
		// and registries send a few hundred bytes), the whole request
		// within 30 s, the answer within 60 s.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if lc.CertFile != "" {
		kp, err := newKeypairReloader(lc.CertFile, lc.KeyFile)
		if err != nil {
			ln.Close()
			return err
		}
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.get}
		ln = tls.NewListener(ln, hs.TLSConfig)
	}
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	s.Start(workCtx)
	s.log.Info("serving", "addr", ln.Addr().String(), "tls", lc.CertFile != "", "rules_version", s.rulesVersion)
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down")
	s.ready.Store(false)
	shutCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = hs.Shutdown(shutCtx)
	cancelWork() // queued scans are dropped; the registry or admission asks again
	if cerr := s.Close(shutCtx); err == nil {
		err = cerr
	}
	return err
}
