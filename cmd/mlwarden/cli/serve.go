//go:build !mlwarden_sbatch

package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/signatures"
	"github.com/mlwarden/mlwarden/server"
	"github.com/mlwarden/mlwarden/server/verdict"
)

func newServeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Answer admission reviews, registry push events and Harbor scans",
		Long: `serve runs mlwarden as a service:

  POST /admission         Kubernetes validating admission webhook (AdmissionReview v1)
  POST /registry/events   registry push notifications: scan each pushed manifest
  /api/v1/...             Harbor pluggable scanner adapter (spec 1.1/1.2)
  /healthz /readyz        probes; /metrics for Prometheus

Every image is scanned by the same pipeline as 'mlwarden scan registry:REF',
with the same settings and suppressions: --config is a file in .mlwarden.yaml
format whose serve: section holds the server's policies, namespaces, events
and store (a file without a serve: section is read as the server section
alone, as before). Verdicts are kept by image digest and rules version, in a
bbolt file and, with serve.store.referrers, in the registry as signed
referrers so that every replica reads the same verdict. Logs are JSON on
stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, a) },
	}
	bindSettings(cmd, "serve")
	return cmd
}

// serveSettings resolves serve's settings and the server's config: from a
// .mlwarden.yaml-format file with a serve: section (its other keys are the
// scan settings), or from a server config file as a whole (the format
// before the serve: section existed; scan settings then come from flags and
// the environment only).
func (a *app) serveSettings(cmd *cobra.Command) (*config.Values, server.Config, error) {
	flags := setFlags(cmd)
	pre, err := config.Resolve("serve", flags, a.lookupEnv, nil)
	if err != nil {
		return nil, server.Config{}, usageError("%v", err)
	}
	path := pre.String("config")
	if path == "" {
		return pre, server.DefaultConfig(), nil
	}
	cfg, err := server.LoadConfig(path)
	if err != nil {
		return nil, server.Config{}, usageError("%v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !server.HasServeSection(data) {
		return pre, cfg, nil
	}
	var section server.Config
	v, err := scan.Configure("serve", flags, a.lookupEnv, nil, config.Owner{Key: "serve", Into: &section})
	if err != nil {
		return nil, server.Config{}, usageError("%v", err)
	}
	return v, cfg, nil
}

func runServe(cmd *cobra.Command, a *app) error {
	v, cfg, err := a.serveSettings(cmd)
	if err != nil {
		return err
	}
	lc := server.ListenConfig{Addr: v.String("listen"), CertFile: v.String("tls-cert"), KeyFile: v.String("tls-key"), InsecureHTTP: v.Bool("insecure-http")}
	if err := server.CheckListen(lc); err != nil {
		return usageError("%v", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(v.String("log-level"))); err != nil {
		return usageError("--log-level: %v", err)
	}
	log := slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	if st := v.String("store"); st != "" {
		cfg.Store.Path = st
	}
	// One guard for every connection made for an image a request names:
	// the scan, tag resolution, signatures and the referrers store.
	allow := append(slices.Clip(cfg.AllowRegistries), v.List("allow-registry")...)
	guard, err := server.NewRegistryGuard(allow)
	if err != nil {
		return usageError("--allow-registry: %v", err)
	}
	sc, err := a.pipeline(v, func(o *scan.Options) {
		o.Warn = func(w string) { log.Warn(w) }
		o.Timeout = 0 // the server bounds each scan itself (below)
		o.Image.Dial = guard.DialContext
	})
	if err != nil {
		return err
	}
	defer sc.Close()

	// With a shared cache backend (--cache-backend redis://…), replicas
	// share verdicts through it as well as layers.
	var shared verdict.Store
	if c := sc.Cache(); c.Shared() {
		shared = verdict.NewCache(c)
	}
	store, closeStore, err := openServeStore(cfg.Store, shared, guard)
	if err != nil {
		return err
	}
	defer closeStore()

	insecure := v.List("insecure-registry")
	opts := []server.Option{}
	sigs, err := serveVerifier(cfg, v.String("config"), insecure, guard)
	if err != nil {
		return usageError("%v", err)
	}
	if sigs != nil {
		opts = append(opts, server.WithSignatureVerifier(sigs))
	}
	srv, err := server.New(append(opts,
		server.WithConfig(cfg),
		server.WithScanner(server.Pipeline{Scanner: sc}),
		server.WithScanTimeout(v.Duration("timeout")),
		server.WithStore(store),
		server.WithLogger(log),
		server.WithRulesVersion(sc.RulesVersion()),
		server.WithVersion(a.build.Version),
		server.WithInsecureRegistries(insecure...),
		server.WithRegistryGuard(guard),
	)...)
	if err != nil {
		return usageError("%v", err)
	}
	if path := v.String("config"); path != "" {
		stop := reloadOnHangup(cmd.Context(), srv, log, path, func() (server.Config, server.SignatureVerifier, error) {
			_, cfg, err := a.serveSettings(cmd)
			if err != nil {
				return cfg, nil, err
			}
			sigs, err := serveVerifier(cfg, path, insecure, guard)
			return cfg, sigs, err
		})
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
func serveVerifier(cfg server.Config, configPath string, insecure []string, guard *server.RegistryGuard) (server.SignatureVerifier, error) {
	if len(cfg.SignaturePolicy.Images) == 0 {
		return nil, nil
	}
	pol := cfg.SignaturePolicy
	if configPath != "" {
		pol = pol.Resolve(filepath.Dir(configPath))
	}
	var nameOpts []name.Option
	if len(insecure) > 0 {
		nameOpts = append(nameOpts, name.Insecure)
	}
	sigs, err := signatures.New(signatures.WithPolicy(pol), signatures.WithNameOptions(nameOpts...),
		signatures.WithRegistryOptions(remote.WithTransport(guard.Transport())))
	if err != nil {
		return nil, fmt.Errorf("%s: signature-policy: %w", configPath, err)
	}
	return server.ImagePolicyVerifier{Policy: sigs}, nil
}

// reloadOnHangup calls load on SIGHUP and swaps in the policies and
// signature policy it returns; a config that does not load or validate is
// logged and the running policies stay. It returns a function that stops it.
func reloadOnHangup(ctx context.Context, srv *server.Server, log *slog.Logger, name string, load func() (server.Config, server.SignatureVerifier, error)) func() {
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
			cfg, sigs, err := load()
			var restart []string
			if err == nil {
				restart, err = srv.Reload(cfg, sigs)
			}
			if err != nil {
				log.Error("config not reloaded; the running policies stay", "config", name, "err", err)
				continue
			}
			log.Info("config reloaded: policies, namespaces and signature policy", "config", name)
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
// (or memory), then shared (the shared result cache, when set), then the
// registry referrers when enabled.
func openServeStore(c server.StoreConfig, shared verdict.Store, guard *server.RegistryGuard) (verdict.Store, func(), error) {
	var local verdict.Store = verdict.NewMemory()
	closeFn := func() {}
	if c.Path != "" {
		b, err := verdict.OpenBolt(c.Path)
		if err != nil {
			return nil, nil, err
		}
		local, closeFn = b, func() { b.Close() }
	}
	if shared != nil {
		local = verdict.Chain{local, shared}
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
	if guard != nil {
		ropts = append(ropts, verdict.WithRemoteOptions(remote.WithTransport(guard.Transport())))
	}
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
