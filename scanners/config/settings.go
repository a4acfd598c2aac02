// Package config declares every setting of mlwarden once — its flag, its
// key in .mlwarden.yaml, its environment variable, its default and its help
// text — and resolves them for one command from the command line, the
// environment and the config file, in that order of precedence. It also
// reads .mlwarden.yaml: every key is a declared setting, an ignore entry or
// a section that its owner decodes; anything else is an error naming the
// file, the line and the key.
//
// The command line (cmd/mlwarden/cli) binds the table to its flags and
// prints --help from it; the README's flag table is generated from it
// (TestREADMEFlagTable). Library packages never import cobra: this package
// knows nothing of flag parsing, only of the values a user set.
package config

import (
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners/catalog"
)

// Type says how a setting's value is written and read.
type Type int

// Setting types.
const (
	// String is one string.
	String Type = iota
	// Bool is true or false; as a flag it takes no value.
	Bool
	// Int is a whole number.
	Int
	// Duration is a Go duration ("90s", "10m"); 0 means no limit.
	Duration
	// Size is a byte size with an optional unit (500MB, 2GiB); see ParseSize.
	Size
	// Severity is a severity name, or "none" where the setting allows it.
	Severity
	// List is a comma list on the command line and in the environment, a
	// YAML list (or a comma string) in the config file.
	List
	// Strings is a repeatable flag; in the environment and the config file
	// it is a list as for List.
	Strings
	// Path is the path of a file that must exist. In the config file a
	// relative path is relative to the config file's directory.
	Path
)

func (t Type) String() string {
	return [...]string{"string", "bool", "int", "duration", "size", "severity", "list", "strings", "path"}[t]
}

// Setting is one setting, declared once.
type Setting struct {
	// Name is the flag name ("fail-on") and the setting's name everywhere.
	Name string
	// Short is the one-letter flag, if any ("f").
	Short string
	// Key is the setting's key in .mlwarden.yaml, dotted for a key inside
	// a section ("cuda.host"); empty when the setting is not read from the
	// config file (what to run, where to write, per-invocation input).
	Key string
	// NoEnv marks a setting not read from the environment; all others are
	// read from MLWARDEN_<NAME> (upper case, "-" as "_").
	NoEnv bool
	Type  Type
	// Default is the value when nothing sets it, as a user would write it.
	Default string
	// Choices, when set, are the only values allowed (each element of a
	// List). "all" in a list of checks stands for every one, or for
	// AllOf when set.
	Choices []string
	AllOf   []string
	// Help is the one line that --help and the README show.
	Help string
	// Commands lists the commands that take the setting ("scan", "sbatch",
	// "serve", "pin", "rules", "version", "cuda check", "cuda host").
	Commands []string
	// PerCommand overrides Default, Choices or Help for one command.
	PerCommand map[string]Override
	// UserOnly, when set, says why the setting is the user's alone: it
	// chooses where credentials go, which results are trusted, what the
	// network is asked for, or how much memory or download a run may use.
	// Such a setting is never taken from a config found in a scanned
	// directory (File.FromTarget), only from the user's own config file
	// (--config, the working directory's), the environment and flags; a
	// target config that sets one is a warning naming the key and this
	// reason (File.Refused).
	UserOnly string
}

// Override is what differs for one command.
type Override struct {
	Default string
	Choices []string
	Help    string
}

// Env is the environment variable the setting is read from ("" for none).
func (s Setting) Env() string {
	if s.NoEnv {
		return ""
	}
	return "MLWARDEN_" + strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
}

// For returns the setting as command cmd sees it, its overrides applied.
func (s Setting) For(cmd string) Setting {
	o, ok := s.PerCommand[cmd]
	if !ok {
		return s
	}
	if o.Default != "" {
		s.Default = o.Default
	}
	if o.Choices != nil {
		s.Choices = o.Choices
	}
	if o.Help != "" {
		s.Help = o.Help
	}
	return s
}

// AllowsNone reports whether a severity setting accepts "none".
func (s Setting) AllowsNone() bool { return s.Type == Severity && slices.Contains(s.Choices, "none") }

// Commands that take settings.
const (
	CmdScan     = "scan"
	CmdSbatch   = "sbatch"
	CmdServe    = "serve"
	CmdPin      = "pin"
	CmdRules    = "rules"
	CmdVersion  = "version"
	CmdCUDA     = "cuda check"
	CmdCUDAHost = "cuda host"
	// CmdSweep takes every setting of scan as well as its own.
	CmdSweep      = "sweep"
	CmdSweepMerge = "sweep merge"
	// CmdNode is `mlwarden node`, the audit of a running node.
	CmdNode = "node"
)

// All is the table: every setting of every command, in the order --help
// and the README list them.
func All() []Setting {
	severities := []string{"critical", "high", "medium", "low", "info", "none"}
	checks := append([]string{"all"}, catalog.Names()...)
	scanning := []string{CmdScan, CmdSbatch, CmdServe}
	// The commands that run the pipeline on targets, cuda check included.
	targetCommands := []string{CmdScan, CmdSbatch, CmdServe, CmdCUDA, CmdNode}
	// The report formats of scan (reports.Formats; kept here so that the
	// table does not import the writers; a test keeps them equal).
	reportFormats := []string{"text", "json", "sarif", "cyclonedx", "junit", "gitlab", "gitlab-secrets", "html"}
	return []Setting{
		// What to run.
		{Name: "checks", Key: "checks", Type: List, Default: "all", Choices: checks, AllOf: catalog.Built(), Commands: scanning,
			Help:       "comma list of checks to run: " + strings.Join(catalog.Names(), ", ") + ", or all",
			PerCommand: map[string]Override{CmdSbatch: {Default: "secrets,pins,misconfig"}}},
		{Name: "config", NoEnv: false, Type: Path, Commands: []string{CmdScan, CmdSbatch, CmdServe, CmdCUDA, CmdNode},
			Help: "config file in .mlwarden.yaml format (default: .mlwarden.yaml in the scanned directory, then in the current one)",
			PerCommand: map[string]Override{
				CmdSbatch: {Help: "config file in .mlwarden.yaml format: checks, fail-on, ignore entries, sbatch settings"},
				CmdServe:  {Help: "config file: .mlwarden.yaml format with a serve: section (policies, namespaces, events, store), or a server config file"},
			}},
		{Name: "no-target-config", Type: Bool, Default: "false", Commands: []string{CmdScan, CmdCUDA},
			Help: "never read a .mlwarden.yaml from a scanned directory (CI on untrusted pull requests); --config still applies"},
		{Name: "fail-on", Key: "fail-on", Type: Severity, Default: "high", Choices: severities, Commands: []string{CmdScan, CmdSbatch, CmdSweepMerge, CmdNode},
			Help:       "exit 1 when a finding is at or above this severity: critical, high, medium, low, info, or none (never)",
			PerCommand: map[string]Override{CmdSbatch: {Help: "reject the job (exit 1) at or above this severity: critical, high, medium, low, info, or none (never)"}}},
		{Name: "baseline", Key: "baseline", Type: Path, Commands: []string{CmdScan, CmdCUDA, CmdNode},
			Help: "a previous JSON report: its findings are suppressed"},
		{Name: "since-commit", Type: String, Commands: []string{CmdScan},
			Help: "scan only what changed after this commit: for git: targets the commits REF..HEAD (merges' own changes too), for a directory in a git work tree the files changed since REF and untracked files"},
		{Name: "staged", Type: Bool, Default: "false", Commands: []string{CmdScan},
			Help: "for a directory in a git work tree: scan the staged files as the index holds them, not the working files (a pre-commit hook)"},
		{Name: "new-only", Type: String, Commands: []string{CmdScan},
			Help: "report only findings not present at REF: a commit for directories and git: targets, another reference (registry:IMAGE:TAG, hf:ORG/NAME@REV, or a tag, digest or revision) for images and hf:"},
		{Name: "max-file-size", Key: "max-file-size", Type: Size, Default: "64GiB", Commands: []string{CmdScan, CmdServe, CmdCUDA},
			Help: "largest file to scan (e.g. 500MB, 2GiB); larger files are reported as errors, never skipped silently"},
		{Name: "max-memory", UserOnly: "it would raise the memory the run may use", Key: "max-memory", Type: Size, Default: "1GiB", Commands: targetCommands,
			Help: "soft ceiling on the process's memory (Go's memory limit: the collector works harder near it); every parser also bounds what one file may make it hold (0: no ceiling)"},
		{Name: "max-archive-depth", Key: "max-archive-depth", Type: Int, Default: "3", Commands: scanning,
			Help: "how deeply nested archives (zip, wheels, jars, tar, gz, bz2, xz, zst, 7z) are opened for the text checks, their members scanned as dist/app.whl!pkg/config.py (gitleaks' flag); what is deeper is reported; 0: archives are not opened"},
		{Name: "secrets-config", Key: "secrets.config", Type: Path, Commands: scanning,
			Help: "extra secret rules in gitleaks TOML format, extending the built-in set"},
		{Name: "verify-secrets", UserOnly: "it would send the scanned secrets to their providers", Key: "secrets.verify", Type: Bool, Default: "false", Commands: []string{CmdScan, CmdServe},
			Help: "ask each leaked credential's provider, once per distinct secret, whether it works (a read-only call to the provider's own HTTPS API; docs/design/verification.md): findings get verification live, revoked or unknown; off: secrets never leave the machine"},
		{Name: "verify-timeout", UserOnly: "it would let a target make the run wait longer on providers", Key: "secrets.verify-timeout", Type: Duration, Default: "10s", Commands: []string{CmdScan, CmdServe},
			Help: "with --verify-secrets: the most one provider call may take; past it the finding is unknown (0: 10s)"},
		{Name: "fail-on-live-only", Key: "fail-on-live-only", Type: Bool, Default: "false", Commands: []string{CmdScan},
			Help: "with --verify-secrets: exit 1 only for live secrets at or above --fail-on; every other finding is still reported"},
		{Name: "workers", Key: "workers", Type: Int, Default: "0", Commands: targetCommands,
			Help: "files, layers and checks to work on at once (0: the number of CPUs)",
			PerCommand: map[string]Override{
				CmdSbatch: {Help: "with --serve: scripts to check at once (0: the number of CPUs, at least 2)"},
			}},
		{Name: "timeout", Key: "timeout", Type: Duration, Default: "0", Commands: targetCommands,
			Help: "the most the whole run may take, e.g. 10m (0: no limit); past it the run stops and exits 2",
			PerCommand: map[string]Override{
				CmdSbatch: {Default: "10s", Help: "the most one check may take; past it the check exits 2 (could not check)"},
				CmdServe:  {Default: "10m", Help: "the most one queued image scan may take (inline admission scans have serve.scan-deadline)"},
			}},

		// Output.
		{Name: "format", Short: "f", Type: String, Default: "text", Choices: reportFormats,
			Commands: []string{CmdScan, CmdSbatch, CmdRules, CmdVersion, CmdCUDA, CmdCUDAHost, CmdSweepMerge, CmdNode},
			Help:     "output format: text, json, sarif, cyclonedx (an ML-BOM), junit, gitlab (a SAST report), gitlab-secrets (a secret detection report), html",
			PerCommand: map[string]Override{
				CmdSbatch:   {Choices: []string{"text", "json", "sarif"}, Help: "output format: text (one short line per finding, for the submit hook), json, sarif"},
				CmdRules:    {Choices: []string{"text", "json"}, Help: "output format: text, json"},
				CmdVersion:  {Choices: []string{"text", "json"}, Help: "output format: text, json"},
				CmdCUDA:     {Choices: []string{"text", "json"}, Help: "output format: text, json"},
				CmdCUDAHost: {Default: "yaml", Choices: []string{"yaml", "json", "text"}, Help: "output format: yaml, json, text"},
			}},
		{Name: "output", Short: "o", Type: String, NoEnv: true, Commands: []string{CmdScan, CmdSbatch, CmdSweepMerge, CmdNode},
			Help: "write the report to this file instead of standard output"},
		{Name: "show-suppressed", Type: Bool, Default: "false", Commands: []string{CmdScan, CmdNode},
			Help: "list suppressed findings in the text format too"},
		{Name: "policy", Type: Strings, Commands: scanning,
			Help: "a file of CEL policies (a YAML document with a policies: list, as in .mlwarden.yaml; docs/policies.md); repeatable; a violation is a finding policy/NAME"},
		{Name: "vex", UserOnly: "it would choose which vulnerability findings are suppressed", Key: "vex", Type: Strings, Commands: []string{CmdScan, CmdServe},
			Help: "an OpenVEX or CycloneDX VEX document (repeatable): a vulns finding whose package and vulnerability a not_affected or fixed statement covers is suppressed with the statement's justification"},
		{Name: "severity", Key: "severity", Type: List, Choices: severities[:5], Commands: []string{CmdScan, CmdNode},
			Help: "report only findings of these severities (comma list, e.g. critical,high; default: all), in every format; the summary counts the hidden ones, which never fail the run"},
		{Name: "exit-code", Key: "exit-code", Type: Int, Default: "1", Commands: []string{CmdScan, CmdNode},
			Help: "exit code when findings are at or above --fail-on (0 to 125, not 2, which always means the scan was not complete)"},
		{Name: "quiet", Short: "q", Type: Bool, Default: "false", Commands: []string{CmdScan, CmdNode},
			Help: "no progress bar and no summary line on standard error (warnings and errors still are)"},

		// mlwarden node.
		{Name: "root", Type: String, Default: "/", Commands: []string{CmdNode},
			Help: "the node tree to audit: / (this node), or a copied or mounted one (proc, sys, etc, var, home under it; links are read as links, never followed out of it)"},
		{Name: "gpu-processes", Type: Path, Commands: []string{CmdNode},
			Help: "the GPU processes as 'nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader' prints them, instead of asking NVML"},
		{Name: "capture", Type: String, NoEnv: true, Commands: []string{CmdNode},
			Help: "write an evidence bundle (.tar.gz) first: the report, and each flagged process's cmdline, status, stat, cgroup, exe link, sockets and environment variable names (never values), and the cron and unit files involved"},
		{Name: "metrics-listen", Type: String, Commands: []string{CmdNode},
			Help: "serve Prometheus metrics (finding counts per rule and node) on this address (e.g. :9464), auditing every --interval, instead of printing one report"},
		{Name: "interval", Type: Duration, Default: "5m", Commands: []string{CmdNode},
			Help: "with --metrics-listen: how often the node is audited"},
		{Name: "skip-dirs", Key: "skip-dirs", Type: List, Commands: []string{CmdScan, CmdCUDA},
			Help: "directories to leave out, as globs relative to each target's root (a glob without / matches a name at any depth: testdata); never read, counted in a target note"},
		{Name: "skip-files", Key: "skip-files", Type: List, Commands: []string{CmdScan, CmdCUDA},
			Help: "files to leave out, as globs relative to each target's root (a glob without / matches a name at any depth: *.onnx); counted in a target note"},

		// Images.
		{Name: "platform", Type: String, Commands: []string{CmdScan, CmdCUDA},
			Help: "image platform os/arch[/variant], or all (default: this host's)"},
		{Name: "insecure-registry", Type: List, Commands: []string{CmdScan, CmdServe, CmdPin, CmdCUDA},
			Help: "registry HOST[:PORT] to reach over plain HTTP (repeatable; loopback always is)"},
		{Name: "no-cache", Type: Bool, Default: "false", Commands: []string{CmdScan, CmdCUDA},
			Help: "do not use or fill the result cache (image layers, Hub LFS files; sweep's finished targets)"},
		{Name: "cache-max-size", Type: Size, Default: "2GiB", Commands: []string{CmdScan, CmdServe, CmdCUDA},
			Help: "bound of the fs result cache; entries unused for --cache-ttl go, then the least recently used (0: no bound; a Redis server bounds itself with maxmemory)"},

		// The result cache (scanners/cache), shared by CI runners and replicas.
		{Name: "cache-backend", UserOnly: "it would choose the result cache whose results are trusted", Key: "cache.backend", Type: String, Default: "fs", Commands: []string{CmdScan, CmdServe, CmdCUDA},
			Help: "where results keyed by content are kept: fs (a directory on this machine), or redis://[USER:PASSWORD@]HOST:PORT[/DB] or rediss://… (TLS; ?ca=FILE for a private CA) for a Redis or Valkey server runners and serve replicas share; one that fails is a warning and a cold scan"},
		{Name: "cache-dir", UserOnly: "it would choose the result cache whose results are trusted", Key: "cache.dir", Type: String, Commands: []string{CmdScan, CmdServe, CmdCUDA},
			Help: "directory of the fs result cache (default: the user cache directory's mlwarden/cache)"},
		{Name: "cache-ttl", UserOnly: "it would choose how long trusted results are kept", Key: "cache.ttl", Type: Duration, Default: "720h", Commands: []string{CmdScan, CmdServe, CmdCUDA},
			Help: "how long a cached result nobody reads is kept; each hit renews it (0: forever, or until the size bound)"},

		// sweep: many targets, split into shards (it takes every scan setting too).
		{Name: "shard", Type: String, Commands: []string{CmdSweep},
			Help: "scan shard N of M (N/M, 0-based; default: $JOB_COMPLETION_INDEX of --shards, else $JOB_COMPLETIONS, else 0/1: everything)"},
		{Name: "shards", Type: Int, Default: "0", Commands: []string{CmdSweep},
			Help: "how many shards the targets are split into (with $JOB_COMPLETION_INDEX, or for --emit-job; 0: $JOB_COMPLETIONS, else 1)"},
		{Name: "report-dir", Type: String, Commands: []string{CmdSweep},
			Help: "also write this shard's JSON report to DIR/shard-N-of-M.json, for 'mlwarden sweep merge'"},
		{Name: "emit-job", Type: Bool, Default: "false", NoEnv: true, Commands: []string{CmdSweep},
			Help: "print a Kubernetes Indexed Job (and the ConfigMap of its target list) that runs one shard per pod, instead of scanning"},
		{Name: "job-name", Type: String, Default: "mlwarden-sweep", Commands: []string{CmdSweep},
			Help: "with --emit-job: the Job's and ConfigMap's name"},
		{Name: "job-namespace", Type: String, Commands: []string{CmdSweep},
			Help: "with --emit-job: their namespace (default: none, the one kubectl applies to)"},
		{Name: "job-image", Type: String, Commands: []string{CmdSweep},
			Help: "with --emit-job: the mlwarden image the pods run (default: this release's, ghcr.io/mlwarden/mlwarden:vVERSION; pin it by digest)"},
		{Name: "job-parallelism", Type: Int, Default: "0", Commands: []string{CmdSweep},
			Help: "with --emit-job: pods running at once (0: one per shard)"},
		{Name: "job-secret", Type: String, Commands: []string{CmdSweep},
			Help: "with --emit-job: a Secret whose keys become the pods' environment (MLWARDEN_CACHE_BACKEND with its password, HF_TOKEN, registry credentials' DOCKER_CONFIG)"},
		{Name: "job-pvc", Type: String, Commands: []string{CmdSweep},
			Help: "with --emit-job: a PersistentVolumeClaim (ReadWriteMany) mounted at /reports, where each pod writes its shard's report (default: none; the results still go to the shared cache)"},

		// Model sources: hf: targets, Hub caches, OCI model artifacts.
		{Name: "download-limit", UserOnly: "it would raise how much the run may download", Key: "download-limit", Type: Size, Default: "2GiB", Commands: []string{CmdScan, CmdCUDA},
			Help: "most bytes downloaded for one hf: target or OCI model artifact, of which only what the checks read is fetched; a file past it is an error (exit 2) named in a target note (0: no limit)"},
		{Name: "network-timeout", UserOnly: "it would let a target make the run wait longer on a server that does not answer", Key: "network-timeout", Type: Duration, Default: "30s", Commands: []string{CmdScan, CmdServe, CmdCUDA},
			Help: "the longest one wait on a registry or the Hub may get nothing (connect, TLS, headers, a body read; a body sending under 1 KiB in that much waiting fails too); the first such timeout ends the target's use of the network, unretried, so a server that never answers ends the target (exit 2) within twice this (0: no bound)"},
		{Name: "hf-endpoint", UserOnly: "it would choose where the Hub token is sent", Key: "hf.endpoint", Type: String, Commands: []string{CmdScan, CmdCUDA},
			Help: "Hugging Face Hub URL for hf: targets, a mirror or proxy (default: $HF_ENDPOINT, else https://huggingface.co); the token comes from HF_TOKEN or the file 'hf auth login' writes, never from a flag"},
		{Name: "kubeconfig", UserOnly: "it would choose which cluster's credentials are used and where they are sent", Key: "kubeconfig", Type: Path, Commands: []string{CmdScan},
			Help: "kubeconfig for k8s:[CONTEXT][/NAMESPACE] targets (default: $KUBECONFIG, then ~/.kube/config, then the pod's service account); the scan only gets and lists (the chart's read-only ClusterRole is enough)"},

		// The cuda check.
		{Name: "host", Key: "cuda.host", Type: Path, Commands: []string{CmdScan, CmdCUDA},
			Help: "cuda check: host facts file (as 'mlwarden cuda host --format yaml' prints it)"},
		{Name: "inventory", Key: "cuda.inventory", Type: Path, Commands: []string{CmdScan, CmdCUDA},
			Help: "cuda check: inventory of named node pools (a verdict per pool)"},
		{Name: "env", Type: Strings, NoEnv: true, Commands: []string{CmdCUDA},
			Help: "image environment variable KEY=VALUE (repeatable)"},
		{Name: "require", Type: String, NoEnv: true, Commands: []string{CmdCUDA},
			Help: "a requirement expression, as NVIDIA_REQUIRE_CUDA"},
		{Name: "driver", Type: String, NoEnv: true, Commands: []string{CmdCUDA},
			Help: "host driver version, e.g. 550.54.15"},
		{Name: "gpu", Type: Strings, NoEnv: true, Commands: []string{CmdCUDA},
			Help: "host GPU as compute capability and optional brand, e.g. 9.0:nvidia (repeatable; with --driver)"},
		{Name: "rules-dir", Type: String, Commands: []string{CmdCUDA},
			Help: "directory with a cuda.yaml that replaces the built-in table"},

		// The vulns check.
		{Name: "advisories", UserOnly: "it would choose the advisories that judge it", Key: "vulns.advisories", Type: Path, Commands: scanning,
			Help: "vulns check: advisory file in rules/advisories.yaml's format; its rows add to the built-in table, and replace rows of the same id"},

		// The sbatch hook.
		{Name: "show", Type: Severity, Choices: severities[:5], Commands: []string{CmdSbatch},
			Help: "print findings at or above this severity (default: --fail-on); those below --fail-on are printed as warnings"},
		{Name: "sbatch-args", Type: Strings, NoEnv: true, Commands: []string{CmdSbatch},
			Help: "options given to sbatch on its command line, as one string (\"-p gpu --container-image=IMG\"); they override the script's directives"},
		{Name: "sbatch-env", Type: Strings, NoEnv: true, Commands: []string{CmdSbatch},
			Help: "NAME=VALUE of the submission's environment (SBATCH_* variables, _SLURM_SPANK_OPTION_* SPANK options); repeatable; they override the script's directives"},
		{Name: "name", Type: String, NoEnv: true, Commands: []string{CmdSbatch},
			Help: "name of the script in messages and the report (default: the path, or 'stdin')"},
		{Name: "serve", Type: String, NoEnv: true, Commands: []string{CmdSbatch},
			Help: "serve checks on this Unix socket until stopped (for job_submit.lua)"},
		{Name: "connect", Type: String, Commands: []string{CmdSbatch},
			Help: "ask the checker serving on this Unix socket; check in-process when it does not answer"},
		{Name: "spank-option", Key: "sbatch.spank-options", Type: Strings, Commands: []string{CmdSbatch},
			Help: "an sbatch option the site's SPANK plugins add (pyxis' are known): NAME, or NAME= when it takes a value; repeatable"},

		// The admission server.
		{Name: "listen", Type: String, Default: ":8443", Commands: []string{CmdServe},
			Help: "address to listen on"},
		{Name: "tls-cert", Type: Path, Commands: []string{CmdServe},
			Help: "TLS certificate file (PEM); reloaded when it changes"},
		{Name: "tls-key", Type: Path, Commands: []string{CmdServe},
			Help: "TLS private key file (PEM)"},
		{Name: "insecure-http", Type: Bool, Default: "false", Commands: []string{CmdServe},
			Help: "allow plain HTTP on a non-loopback address"},
		{Name: "store", Type: String, Commands: []string{CmdServe},
			Help: "bbolt verdict store file (overrides serve.store.path)"},
		{Name: "allow-registry", Type: List, Commands: []string{CmdServe},
			Help: "a loopback or private registry the server may contact (Pods, Harbor and events name registries; others are refused): HOST (its ports 443 and 80), HOST:PORT or [IPv6]:PORT, globs allowed (*.corp.example, 10.0.0.5:*); repeatable, adds to serve.allow_registries; link-local and metadata addresses are never contacted"},
		{Name: "log-level", Type: String, Default: "info", Choices: []string{"debug", "info", "warn", "error"}, Commands: []string{CmdServe},
			Help: "debug, info, warn or error"},

		// Pinning.
		{Name: "dry-run", Type: Bool, Default: "false", NoEnv: true, Commands: []string{CmdPin},
			Help: "print a unified diff of the changes instead of writing the files"},
		{Name: "offline", Type: Bool, Default: "false", Commands: []string{CmdPin},
			Help: "ask no registry or forge: report each reference as not resolvable offline"},
		{Name: "github-api", Type: String, Default: "https://api.github.com", Commands: []string{CmdPin},
			Help: "GitHub API that resolves Actions uses: refs to commits (GitHub Enterprise: https://HOST/api/v3); token from GITHUB_TOKEN or GH_TOKEN"},

		// Rules.
		{Name: "check", Type: String, NoEnv: true, Choices: catalog.Names(), Commands: []string{CmdRules},
			Help: "only this check's rules"},
	}
}

// For returns the settings command cmd takes, as it sees them: sweep
// takes every setting of scan, as scan sees it, after its own.
func For(cmd string) []Setting {
	var out []Setting
	for _, s := range All() {
		if slices.Contains(s.Commands, cmd) {
			out = append(out, s.For(cmd))
		}
	}
	if cmd == CmdSweep {
		for _, s := range All() {
			if slices.Contains(s.Commands, CmdScan) && !slices.Contains(s.Commands, CmdSweep) {
				out = append(out, s.For(CmdScan))
			}
		}
	}
	return out
}

// Own returns the settings that name command cmd itself (sweep's own,
// without those it takes from scan), as For writes them.
func Own(cmd string) []Setting {
	var out []Setting
	for _, s := range All() {
		if slices.Contains(s.Commands, cmd) {
			out = append(out, s.For(cmd))
		}
	}
	return out
}

// Lookup returns the setting named name as command cmd sees it.
func Lookup(cmd, name string) (Setting, bool) {
	for _, s := range For(cmd) {
		if s.Name == name {
			return s, true
		}
	}
	return Setting{}, false
}
