// Package scan is mlwarden's one scan pipeline: every front end — `mlwarden
// scan`, the sbatch checker (one script per process or a socket server),
// the admission server (inline scans, registry push events, Harbor scans)
// — builds a Scanner from its resolved settings and calls Run. Nothing else
// opens sources, builds checks, runs the dispatcher or suppresses findings.
//
//	settings (config.Resolve) ─▶ Options ─▶ New ─▶ Scanner.Run(targets)
//	  sources ─▶ dispatcher (+ inline suppression) ─▶ suppression set ─▶ Result
//
// A Scanner is set up once (the checks compiled, the baseline read) and is
// safe to Run many times, from several goroutines.
package scan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/archive"
	"github.com/mlwarden/mlwarden/scanners/catalog"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/cuda"
	"github.com/mlwarden/mlwarden/scanners/pins"
	"github.com/mlwarden/mlwarden/scanners/secrets"
	"github.com/mlwarden/mlwarden/scanners/slurm"
	"github.com/mlwarden/mlwarden/scanners/source/script"
	"github.com/mlwarden/mlwarden/scanners/suppress"
	"github.com/mlwarden/mlwarden/scanners/vulns"
)

// Exit codes, as the command line documents them.
const (
	ExitOK       = 0 // nothing at or above --fail-on
	ExitFindings = 1 // findings at or above --fail-on
	ExitError    = 2 // the run failed or a target could not be scanned in full
)

// EnvVerifyEndpoints is the variable a front end reads into
// Options.VerifyEndpoints (verify.EnvEndpoints; named here so that the
// sbatch build, which has no verifier, need not link it).
const EnvVerifyEndpoints = "MLWARDEN_VERIFY_ENDPOINTS"

// Options configures a Scanner: the resolved settings in library types.
// OptionsFrom builds them from config.Values; zero fields take defaults.
type Options struct {
	// Checks enables only these (default: all).
	Checks []string
	// Scanners, when set, are the checks to run instead of the built-in
	// ones Checks names (a library user's own check, a test's).
	Scanners []scanners.Scanner
	// Extra are checks run beside the built-in ones Checks names
	// (mlwarden node's audit, which judges facts the front end read).
	Extra []scanners.Scanner
	// Config is the config file in effect (nil for none): its ignore
	// entries and owners' sections apply.
	Config *config.File
	// Baseline is a previous JSON report whose findings are suppressed.
	Baseline string
	// SinceCommit narrows git: targets to the commits after it and work-tree
	// directories to the files changed since it (--since-commit).
	SinceCommit string
	// Staged scans a work tree's staged files as the index holds them
	// (--staged).
	Staged bool
	// NewOnly reports only the findings not present at this commit or
	// reference (--new-only; docs/design/scopes.md).
	NewOnly string
	// MaxFileSize is the largest file scanned (default 64 GiB).
	MaxFileSize int64
	// MaxArchiveDepth is how deeply archives nest that are opened for the
	// text checks when the secrets check runs (scanners/archive; default
	// archive.DefaultMaxDepth; negative: archives are not opened).
	MaxArchiveDepth int
	// Workers bounds the files, layers and checks worked on at once
	// (default: the CPUs).
	Workers int
	// Timeout bounds one Run (0: no limit).
	Timeout time.Duration
	// Severities, when set, are the only severities reported (--severity):
	// other findings are removed from the result after suppression and
	// counted in Summary.Hidden, so they neither show nor fail the run.
	Severities []scanners.Severity
	// Skip leaves out directories and files (--skip-dirs, --skip-files).
	Skip scanners.Skip
	// Progress, when set, is told how far each target's walk has got.
	Progress scanners.Progress
	// HashComponents takes the SHA-256 of every model file, reading it
	// whole when no check does (for a bill of materials).
	HashComponents bool
	// SecretsConfig is a user's gitleaks-format rules file.
	SecretsConfig string
	// LazySecretRules compiles only the secret rules an input can hit: for
	// a process that scans one small script (the sbatch hook), where
	// compiling every rule costs more than the scan. Auto enables it when
	// the targets are a few small local files.
	LazySecretRules bool
	// CUDAHost and CUDAInventory are host facts files for the cuda check;
	// without either, the check reads this node (NVML) when CUDALocal.
	CUDAHost, CUDAInventory string
	CUDALocal               bool
	// Advisories is an advisory file extending the vulns check's table.
	Advisories string
	// Signatures is the signature policy (the config's signatures
	// section), paths already relative to the config file.
	Signatures SignaturesPolicy
	// CacheBackend is where results keyed by content are kept
	// (--cache-backend: "" or "fs", redis://, rediss://; see
	// scanners/cache), Cache its bounds and directory. Image.NoCache turns
	// it off; Image.Cache, when set, is used instead.
	// (The types of these four fields are cache.Options, image.Options,
	// source.GitOptions and hf.Options; stand-ins in mlwarden-sbatch, see
	// sources_sbatch.go.)
	CacheBackend string
	Cache        cacheOptions
	// Image configures image targets (platform, registries, cache).
	Image imageOptions
	// Git configures repository targets.
	Git gitOptions
	// HF configures hf: targets (endpoint, token, download limit); its
	// Cache is the image cache unless set (Image.NoCache turns both off).
	HF hfOptions
	// VerifySecrets asks each secret finding's provider whether the
	// credential works (--verify-secrets; docs/design/verification.md):
	// one call per distinct secret, VerifyTimeout bounding each (0: 10s),
	// the answers kept in the result cache for Cache.TTL. Without it no
	// secret leaves the machine. VerifyEndpoints is MLWARDEN_VERIFY_ENDPOINTS
	// (loopback base URLs, for tests; anything else is an error of New).
	VerifySecrets   bool
	VerifyTimeout   time.Duration
	VerifyEndpoints string
	// K8s configures k8s: targets (the kubeconfig; their images are
	// opened with Image). The type is k8s.Options (a stand-in in
	// mlwarden-sbatch).
	K8s k8sOptions
	// Spank lists the SPANK options the site's plugins add to sbatch.
	Spank []slurm.OptionSpec
	// Stdin is read for the target "-".
	Stdin io.Reader
	// Version names the build, for the rules version that keys caches.
	Version string
	// Policies are the CEL policies evaluated on each target's result
	// (--policy files, the config's policies section; scanners/policy).
	Policies []PolicySpec
	// VEX are OpenVEX or CycloneDX VEX documents whose statements suppress
	// the vulns findings they cover (scanners/vex).
	VEX []string
	// Warn receives what a user should see but that is not a finding
	// (an expired ignore entry); nil drops it.
	Warn func(string)
	// Now is the time expiry dates are judged at (default time.Now).
	Now func() time.Time
}

// Scanner is the pipeline set up once: the checks built, the baseline read.
type Scanner struct {
	o      Options
	checks []scanners.Scanner
	// rules and version are computed at first use: a clean script in a
	// per-job sbatch process needs neither (docs/design/sbatch-hook.md).
	rules    func() []scanners.Rule
	baseline suppress.Baseline
	secrets  *secrets.Scanner
	verifier secretVerifier // nil unless Options.VerifySecrets
	version  func() string
	cache    resultCache // opened by New; nil when off
	archives *archive.Expander
	policies policySet
	vex      vexSet
}

// New sets the pipeline up. A bad setting, a config path that does not
// exist or a rules file that does not parse is an error (exit 2).
func New(o Options) (*Scanner, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = defaultMaxFileSize
	}
	if len(o.Checks) == 0 {
		o.Checks = catalog.Built()
	}
	copts := catalog.Options{Checks: o.Checks, SecretsConfig: o.SecretsConfig}
	if o.LazySecretRules {
		copts.Secrets = append(copts.Secrets, secrets.WithLazyRules())
	}
	switch {
	case o.CUDAHost != "":
		copts.CUDA = append(copts.CUDA, cuda.WithHostFile(o.CUDAHost))
	case o.CUDAInventory != "":
		copts.CUDA = append(copts.CUDA, cuda.WithInventory(o.CUDAInventory))
	case o.CUDALocal:
		copts.CUDA = append(copts.CUDA, cuda.WithLocalHost())
	}
	copts.Signatures = append(copts.Signatures, signaturesOptions(o.Signatures)...)
	if o.Advisories != "" {
		copts.Vulns = append(copts.Vulns, vulns.WithAdvisoriesFile(o.Advisories))
	}
	if len(o.Spank) > 0 {
		// Both checks that read #SBATCH lines read them as this site's
		// sbatch does.
		copts.Slurm = append(copts.Slurm, slurm.WithSpank(o.Spank...))
		copts.Pins = append(copts.Pins, pins.WithSpank(o.Spank...))
	}
	checks := o.Scanners
	if checks == nil {
		var err error
		if checks, err = catalog.New(copts); err != nil {
			return nil, err
		}
	}
	checks = append(slices.Clip(checks), o.Extra...)
	s := &Scanner{o: o, checks: checks}
	warnTargetConfig(o.Config, o.Warn)
	s.rules = sync.OnceValue(func() []scanners.Rule { return catalog.RulesOf(checks) })
	for _, c := range checks {
		if sec, ok := c.(*secrets.Scanner); ok {
			s.secrets = sec
		}
	}
	var err error
	if s.policies, err = compilePolicies(o.Policies); err != nil {
		catalog.Close(checks)
		return nil, err
	}
	if s.vex, err = loadVEX(o.VEX); err != nil {
		catalog.Close(checks)
		return nil, err
	}
	if o.Baseline != "" {
		if s.baseline, err = suppress.ReadBaseline(o.Baseline); err != nil {
			catalog.Close(checks)
			return nil, err
		}
	}
	var files []string
	if o.Config != nil {
		files = append(files, o.Config.Path)
	}
	files = append(files, o.SecretsConfig, o.CUDAHost, o.CUDAInventory, o.Advisories)
	// What a run leaves out, or adds to every component, changes what a
	// cached result holds.
	build := o.Version
	if !o.Skip.Empty() {
		build += "\x00skip\x00" + strings.Join(o.Skip.Dirs, "\x00") + "\x00files\x00" + strings.Join(o.Skip.Files, "\x00")
	}
	if o.HashComponents {
		build += "\x00hash-components"
	}
	if o.VerifySecrets {
		// A verdict or target result made with verification differs.
		build += "\x00verify-secrets"
	}
	if s.secrets != nil && o.MaxArchiveDepth >= 0 {
		// Archives are opened for the secrets check's sake (its rules say
		// what was not scanned); every text check gets the members. The
		// models check reports names that climb out of every archive it
		// opens; without it, the secrets check does.
		ao := archive.Options{MaxDepth: o.MaxArchiveDepth, NotScanned: secrets.RuleArchiveNotScanned}
		if !slices.Contains(o.Checks, scanners.CheckModels) {
			ao.Escapes = &secrets.RuleArchiveMemberEscapes
		}
		s.archives = archive.New(ao)
		build += fmt.Sprintf("\x00archive-depth\x00%d\x00%v", o.MaxArchiveDepth, ao.Escapes != nil)
	}
	s.version = sync.OnceValue(func() string { return RulesVersion(build, o.Checks, s.rules(), files...) })
	if err := s.openSources(); err != nil {
		catalog.Close(checks)
		return nil, err
	}
	if err := s.openVerifier(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases what the checks hold between runs, and the cache.
func (s *Scanner) Close() {
	catalog.Close(s.checks)
	if s.verifier != nil {
		s.verifier.Close()
	}
	if s.cache != nil {
		s.cache.Close()
	}
}

// Rules lists the rules of the enabled checks, sorted by ID, then those of
// the policies.
func (s *Scanner) Rules() []scanners.Rule {
	if pr := policyRules(s.policies); len(pr) > 0 {
		return append(slices.Clone(s.rules()), pr...)
	}
	return s.rules()
}

// Rule returns the rule of Rules() with ID id, without listing every
// check's rules when the check describes one (scanners.RuleOf).
func (s *Scanner) Rule(id string) (scanners.Rule, bool) {
	if r, ok := scanners.RuleOf(s.checks, id); ok {
		return r, true
	}
	for _, r := range policyRules(s.policies) {
		if r.ID == id {
			return r, true
		}
	}
	return scanners.Rule{}, false
}

// Checks lists the enabled checks.
func (s *Scanner) Checks() []string { return s.o.Checks }

// RulesVersion names everything that decides the findings of this
// Scanner; it keys the per-layer cache and the server's verdicts.
func (s *Scanner) RulesVersion() string { return s.version() }

// Target is one thing to scan.
type Target struct {
	// Ref is a target as on the command line: a path, "-" (Options.Stdin),
	// or scheme:REF (registry:, oci:, docker-archive:, git:, hf:, dir:, file:).
	Ref string
	// Script, when set instead of Ref, is a batch script held in memory,
	// checked as sbatch would run it.
	Script *Script
	// Auth, when set, authenticates to the registry of an image target
	// (the credentials a Harbor scan request came with).
	Auth authenticator
	// Insecure reaches the image's registry over plain HTTP (a registry the
	// caller already knows to speak it).
	Insecure bool
	// base, when set, reads a git: target or a work-tree directory as it
	// was at this commit (the base scan of --new-only).
	base string
	// Source, when set instead of Ref, is a source the front end built
	// (mlwarden node's node: its configuration files and inventory).
	Source scanners.Source
}

// Result is what one Run found: the report, and for the sbatch front end
// what each line of a submission's options stands for.
type Result struct {
	*scanners.Result
	// Options maps a submission's options target (named Script.Name +
	// OptionsSuffix) to what each of its lines stands for: the option as
	// the user gave it ("--container-image=… (from SBATCH_CONTAINER_IMAGE)").
	Options map[string]map[int]string
}

// Run scans the targets and applies every suppression. A target that could
// not be opened or read in full is in the result's errors (exit 2), never
// a reason to drop other targets' findings. The returned error is only for
// a run that did not happen at all.
//
// With NewOnly, each target is scanned a second time as it was at that
// commit or reference, and the findings present there are left out
// (newonly.go).
func (s *Scanner) Run(ctx context.Context, targets ...Target) (*Result, error) {
	if s.o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.o.Timeout)
		defer cancel()
	}
	out, names := s.run(ctx, targets)
	if s.o.NewOnly != "" {
		s.newOnly(ctx, out.Result, targets, names)
	}
	return out, nil
}

// run is one Run without --new-only: the result, and the name each target
// has in it ("" for a target that could not be opened).
func (s *Scanner) run(ctx context.Context, targets []Target) (*Result, []string) {
	out := &Result{}
	names := make([]string, len(targets))
	var srcs []scanners.Source
	var openErrs []scanners.Error
	var subs []*submission
	defer func() {
		for _, src := range srcs {
			if c, ok := src.(io.Closer); ok {
				c.Close()
			}
		}
	}()
	for i, t := range targets {
		switch {
		case t.Source != nil:
			names[i] = t.Source.Target().Name
			srcs = append(srcs, t.Source)
		case t.Script != nil:
			sub := s.submission(t.Script)
			subs = append(subs, sub)
			srcs = append(srcs, sub.sources()...)
		case t.Ref == "-":
			in := s.o.Stdin
			if in == nil {
				in = strings.NewReader("")
			}
			srcs = append(srcs, script.Open("stdin", in))
		default:
			src, err := s.open(ctx, t)
			if err != nil {
				openErrs = append(openErrs, scanners.Error{Target: t.Ref, Message: err.Error()})
				continue
			}
			names[i] = src.Target().Name
			srcs = append(srcs, src)
		}
	}
	opts := []scanners.Option{scanners.WithWorkers(s.o.Workers), scanners.WithInlineSuppression(suppress.Inline),
		scanners.WithSkip(s.o.Skip), scanners.WithComponentHashes(s.o.HashComponents)}
	if s.o.Progress != nil {
		opts = append(opts, scanners.WithProgress(s.o.Progress))
	}
	if s.archives != nil {
		opts = append(opts, scanners.WithExpander(s.archives))
	}
	d := scanners.NewDispatcher(s.checks, opts...)
	res := d.Run(ctx, srcs...)
	res.Errors = append(openErrs, res.Errors...)
	for _, sub := range subs {
		sub.finish(res, s)
		if sub.lines != nil {
			if out.Options == nil {
				out.Options = map[string]map[int]string{}
			}
			out.Options[sub.optsName] = sub.lines
		}
	}
	if err := ctx.Err(); err != nil {
		msg := "interrupted: " + err.Error()
		if errors.Is(err, context.DeadlineExceeded) && s.o.Timeout > 0 {
			msg = fmt.Sprintf("not scanned in full: the run took longer than --timeout %s", s.o.Timeout)
		}
		res.Errors = append(res.Errors, scanners.Error{Message: msg})
	}
	s.verify(ctx, res)
	set := s.suppressions(srcs)
	for _, w := range set.Apply(res) {
		if s.o.Warn != nil {
			s.o.Warn(w)
		}
	}
	applyVEX(s.vex, res)
	if found := evaluatePolicies(ctx, s.policies, res); len(found) > 0 {
		// Policies judge the target once every other suppression is
		// known (their input says which findings are suppressed); their
		// own findings then go through the same set.
		set.Apply(&scanners.Result{Findings: found})
		res.Findings = append(res.Findings, found...)
		order := make(map[string]int, len(res.Targets))
		for i, t := range res.Targets {
			order[t.Name] = i
		}
		scanners.SortFindings(res.Findings, order)
		res.Summary = scanners.Summarize(res.Findings)
	}
	LiveFirst(res)
	markTargetConfig(res, s.o.Config)
	FilterSeverities(res, s.o.Severities)
	out.Result = res
	return out, names
}

// suppressions is the set that applies once the run is over: the config's
// ignore entries, the baseline, and each local directory's or repository's
// .gitleaksignore.
func (s *Scanner) suppressions(srcs []scanners.Source) *suppress.Set {
	set := &suppress.Set{Baseline: s.baseline, Now: s.o.Now}
	if s.o.Config != nil {
		set.Ignores = s.o.Config.Ignore
	}
	if s.secrets == nil {
		return set
	}
	set.GitleaksRuleID = s.secrets.GitleaksRuleID
	set.Gitleaks = map[string]suppress.GitleaksIgnore{}
	for _, src := range srcs {
		t := src.Target()
		if t.Kind != scanners.KindDir && t.Kind != scanners.KindRepo {
			continue
		}
		r, ok := src.(interface{ FS() fs.FS })
		if !ok || r.FS() == nil {
			continue // a remote repository's is not the user's
		}
		data, err := readSmall(r.FS(), suppress.GitleaksIgnoreFile, 1<<20)
		if err != nil {
			continue
		}
		set.Gitleaks[t.Name] = suppress.ParseGitleaksIgnore(data)
	}
	return set
}

// readSmall reads a regular file of at most limit bytes from fsys.
func readSmall(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a small regular file", name)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// FilterSeverities removes from res the findings whose severity is not in
// keep (nil: keep all) and counts them in res.Summary.Hidden.
func FilterSeverities(res *scanners.Result, keep []scanners.Severity) {
	if len(keep) == 0 {
		return
	}
	n := len(res.Findings)
	res.Findings = slices.DeleteFunc(res.Findings, func(f scanners.Finding) bool { return !slices.Contains(keep, f.Severity) })
	hidden := res.Summary.Hidden + n - len(res.Findings)
	res.Summary = scanners.Summarize(res.Findings)
	res.Summary.Hidden = hidden
}

// ExitCode is the exit code of a run: 2 when anything could not be
// scanned in full (that wins over findings), 1 when an unsuppressed finding
// is at or above failOn (nil: never), else 0.
func ExitCode(res *scanners.Result, failOn *scanners.Severity) int {
	switch {
	case len(res.Errors) > 0:
		return ExitError
	case failOn != nil && res.Failed(*failOn):
		return ExitFindings
	}
	return ExitOK
}

// LiveFirst moves the findings verified live to the front of res, keeping
// the order of the rest: the credentials someone can use now are read
// first in every report. (After suppression: the legacy fingerprints of
// repeats are numbered in the dispatcher's order.)
func LiveFirst(res *scanners.Result) {
	slices.SortStableFunc(res.Findings, func(a, b scanners.Finding) int {
		al, bl := a.Verification == scanners.VerificationLive, b.Verification == scanners.VerificationLive
		switch {
		case al && !bl:
			return -1
		case bl && !al:
			return 1
		}
		return 0
	})
}

// ExitCodeLive is ExitCode for --fail-on-live-only: 2 when anything could
// not be scanned in full, 1 when an unsuppressed finding verified live is
// at or above failOn (nil: never), else 0. Every other finding is still
// in the report; it does not fail the run.
func ExitCodeLive(res *scanners.Result, failOn *scanners.Severity) int {
	if len(res.Errors) > 0 {
		return ExitError
	}
	if failOn != nil {
		for _, f := range res.Findings {
			if f.Suppressed == "" && f.Verification == scanners.VerificationLive && f.Severity >= *failOn {
				return ExitFindings
			}
		}
	}
	return ExitOK
}

// RulesVersion names everything that decides findings: the build, the
// enabled checks, every rule and its severity, the executable itself (a
// rebuilt development binary), and the content of the files that configure
// the checks (config file, extra secret rules, CUDA host facts). Caches of
// results — the per-layer cache, the server's verdicts — are keyed by it,
// so that any change rescans.
func RulesVersion(version string, checks []string, rules []scanners.Rule, files ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", version, strings.Join(checks, ","))
	for _, r := range rules {
		fmt.Fprintf(h, "%s\x00%s\x00", r.ID, r.Severity)
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprintf(h, "%d\x00%d\x00", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		data, _ := os.ReadFile(f) // a missing file hashes as empty; New reports it
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	return "v1-" + hex.EncodeToString(h.Sum(nil))[:16]
}
