package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/signatures"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/server"
	"github.com/mlwarden/mlwarden/server/imagescan"
	"github.com/mlwarden/mlwarden/server/verdict"
)

// serveOptions are the flags of `mlwarden serve`.
type serveOptions struct {
	listen       string
	tlsCert      string
	tlsKey       string
	insecureHTTP bool
	config       string
	store        string
	checks       string
	insecureRegs []string
	logLevel     string
}

func newServeCmd(a *app) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Answer admission reviews, registry push events and Harbor scans",
		Long: `serve runs mlwarden as a service:

  POST /admission         Kubernetes validating admission webhook (AdmissionReview v1)
  POST /registry/events   registry push notifications: scan each pushed manifest
  /api/v1/...             Harbor pluggable scanner adapter (spec 1.1/1.2)
  /healthz /readyz        probes; /metrics for Prometheus

Verdicts are kept by image digest and rules version, in a bbolt file and,
with store.referrers in the config, in the registry as signed referrers so
that every replica reads the same verdict. Logs are JSON on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, a, &o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", ":8443", "address to listen on")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate file (PEM); reloaded when it changes")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	f.BoolVar(&o.insecureHTTP, "insecure-http", false, "allow plain HTTP on a non-loopback address")
	f.StringVar(&o.config, "config", "", "server configuration file (policies, namespaces, events, store)")
	f.StringVar(&o.store, "store", "", "bbolt verdict store file (overrides store.path)")
	f.StringVar(&o.checks, "checks", "all", "comma list of checks run on images")
	f.StringSliceVar(&o.insecureRegs, "insecure-registry", nil, "registry host reached over plain HTTP (repeatable)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func runServe(cmd *cobra.Command, a *app, o *serveOptions) error {
	lc := server.ListenConfig{Addr: o.listen, CertFile: o.tlsCert, KeyFile: o.tlsKey, InsecureHTTP: o.insecureHTTP}
	if err := server.CheckListen(lc); err != nil {
		return usageError("%v", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usageError("--log-level: %v", err)
	}
	log := slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: level}))

	cfg := server.DefaultConfig()
	if o.config != "" {
		var err error
		if cfg, err = server.LoadConfig(o.config); err != nil {
			return usageError("%v", err)
		}
	}
	if o.store != "" {
		cfg.Store.Path = o.store
	}
	checks, err := catalog.ParseChecks(o.checks)
	if err != nil {
		return usageError("--checks: %v", err)
	}
	scs, err := catalog.New(catalog.Options{Checks: checks})
	if err != nil {
		return err
	}
	rv := server.RulesVersion(a.build.Version, checks, catalog.RulesOf(scs))
	scanner := imagescan.New(scs, imagescan.WithImageOptions(image.Options{
		RulesVersion: rv,
		Insecure:     o.insecureRegs,
	}))

	store, closeStore, err := openServeStore(cfg.Store)
	if err != nil {
		return err
	}
	defer closeStore()

	opts := []server.Option{}
	sigs, err := serveVerifier(cfg, o)
	if err != nil {
		return usageError("%v", err)
	}
	if sigs != nil {
		opts = append(opts, server.WithSignatureVerifier(sigs))
	}
	srv, err := server.New(append(opts,
		server.WithConfig(cfg),
		server.WithScanner(scanner),
		server.WithStore(store),
		server.WithLogger(log),
		server.WithRulesVersion(rv),
		server.WithVersion(a.build.Version),
		server.WithInsecureRegistries(o.insecureRegs...),
	)...)
	if err != nil {
		return usageError("%v", err)
	}
	if o.config != "" {
		stop := reloadOnHangup(cmd.Context(), srv, o, log)
		defer stop()
	}
	if err := srv.Run(cmd.Context(), lc, nil); err != nil && !errors.Is(err, cmd.Context().Err()) {
		return err
	}
	return nil
}

// serveVerifier builds the signature verifier the config's signature-policy
// asks for (nil when it names no images); key and root files are relative
// to the config file.
func serveVerifier(cfg server.Config, o *serveOptions) (server.SignatureVerifier, error) {
	if len(cfg.SignaturePolicy.Images) == 0 {
		return nil, nil
	}
	pol := cfg.SignaturePolicy
	if o.config != "" {
		pol = pol.Resolve(filepath.Dir(o.config))
	}
	var nameOpts []name.Option
	if len(o.insecureRegs) > 0 {
		nameOpts = append(nameOpts, name.Insecure)
	}
	sigs, err := signatures.New(signatures.WithPolicy(pol), signatures.WithNameOptions(nameOpts...))
	if err != nil {
		return nil, fmt.Errorf("%s: signature-policy: %w", o.config, err)
	}
	return server.ImagePolicyVerifier{Policy: sigs}, nil
}

// reloadOnHangup re-reads the config file on SIGHUP and swaps in its
// policies and signature policy; a config that does not load or validate is
// logged and the running policies stay. It returns a function that stops it.
func reloadOnHangup(ctx context.Context, srv *server.Server, o *serveOptions, log *slog.Logger) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-hup:
				if !ok {
					return
				}
			}
			cfg, err := server.LoadConfig(o.config)
			var sigs server.SignatureVerifier
			if err == nil {
				sigs, err = serveVerifier(cfg, o)
			}
			var restart []string
			if err == nil {
				restart, err = srv.Reload(cfg, sigs)
			}
			if err != nil {
				log.Error("config not reloaded; the running policies stay", "config", o.config, "err", err)
				continue
			}
			log.Info("config reloaded: policies, namespaces and signature policy", "config", o.config)
			if len(restart) > 0 {
				log.Warn("config changes that take a restart were not applied", "settings", restart)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(hup)
		<-done
	}
}

// openServeStore opens the verdict stores the config names: the bbolt file
// (or memory), then the registry referrers when enabled.
func openServeStore(c server.StoreConfig) (verdict.Store, func(), error) {
	var local verdict.Store = verdict.NewMemory()
	closeFn := func() {}
	if c.Path != "" {
		b, err := verdict.OpenBolt(c.Path)
		if err != nil {
			return nil, nil, err
		}
		local, closeFn = b, func() { b.Close() }
	}
	if !c.Referrers {
		return local, closeFn, nil
	}
	if c.PublicKey == "" {
		closeFn()
		return nil, nil, usageError("store.referrers needs store.public-key to verify verdicts read back")
	}
	ver, err := verdict.LoadPublicKey(c.PublicKey)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	ropts := []verdict.ReferrersOption{verdict.WithVerifier(ver)}
	if c.Key != "" {
		env := c.KeyPasswordEnv
		if env == "" {
			env = "COSIGN_PASSWORD"
		}
		sv, err := verdict.LoadCosignKey(c.Key, []byte(os.Getenv(env)))
		if err != nil {
			closeFn()
			return nil, nil, fmt.Errorf("store.key: %w", err)
		}
		ropts = append(ropts, verdict.WithSigner(sv))
	}
	reg, err := verdict.NewReferrers(ropts...)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return verdict.Chain{local, reg}, closeFn, nil
}
