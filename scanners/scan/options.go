package scan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/slurm"
)

// Owners are the config file's sections that the pipeline's checks own,
// decoded strictly when the file is read.
func Owners() []config.Owner {
	return []config.Owner{signaturesOwner(), policiesOwner()}
}

// Configure resolves the settings of command cmd: it finds the config file
// — --config; for a command that scans targets a user names (scan, which
// has --no-target-config) also .mlwarden.yaml in the first directory target
// unless --no-target-config, else in the working directory — reads it with
// the pipeline's owners and extra (a front end's own sections), and
// resolves every setting from flags, environment, file and defaults. flags
// holds the flags the user set; env is os.LookupEnv (or a stand-in).
func Configure(cmd string, flags map[string][]string, env func(string) (string, bool), targets []string, extra ...config.Owner) (*config.Values, error) {
	pre, err := config.Resolve(cmd, flags, env, nil)
	if err != nil {
		return nil, err
	}
	explicit := ""
	if pre.Has("config") {
		explicit = pre.String("config")
	}
	owners := append(Owners(), extra...)
	targets = configTargets(targets)
	var file *config.File
	switch {
	case pre.Has("no-target-config"):
		file, err = config.Find(explicit, targets, pre.Bool("no-target-config"), owners...)
	case explicit != "":
		file, err = config.Load(explicit, owners...)
	}
	if err != nil {
		return nil, err
	}
	return config.Resolve(cmd, flags, env, file)
}

// OptionsFrom turns resolved settings into pipeline options; settings the
// command does not have keep their defaults.
func OptionsFrom(v *config.Values) (Options, error) {
	o := Options{Config: v.File(), CUDALocal: true}
	str := func(name string) string {
		if !v.Has(name) {
			return ""
		}
		return v.String(name)
	}
	if v.Has("checks") {
		o.Checks = v.List("checks")
	}
	o.Baseline = str("baseline")
	o.SinceCommit, o.NewOnly = str("since-commit"), str("new-only")
	o.Staged = v.Has("staged") && v.Bool("staged")
	if o.Staged && o.SinceCommit != "" {
		return o, fmt.Errorf("--staged and --since-commit: choose one (the index, or the changes since a commit)")
	}
	o.SecretsConfig = str("secrets-config")
	o.CUDAHost, o.CUDAInventory = str("host"), str("inventory")
	o.Advisories = str("advisories")
	if v.Has("max-file-size") {
		o.MaxFileSize = v.Size("max-file-size")
	}
	if v.Has("max-archive-depth") {
		if o.MaxArchiveDepth = v.Int("max-archive-depth"); o.MaxArchiveDepth <= 0 {
			o.MaxArchiveDepth = -1 // archives not opened
		}
	}
	if v.Has("workers") {
		o.Workers = v.Int("workers")
	}
	if v.Has("severity") {
		for _, name := range v.List("severity") {
			sev, err := scanners.ParseSeverity(name)
			if err != nil {
				return o, fmt.Errorf("--severity: %w", err)
			}
			o.Severities = append(o.Severities, sev)
		}
	}
	if v.Has("skip-dirs") {
		o.Skip.Dirs = v.List("skip-dirs")
	}
	if v.Has("skip-files") {
		o.Skip.Files = v.List("skip-files")
	}
	if err := o.Skip.Validate(); err != nil {
		return o, fmt.Errorf("--skip-dirs/--skip-files: %w", err)
	}
	if v.Has("timeout") {
		o.Timeout = v.Duration("timeout")
	}
	if v.Has("verify-secrets") {
		o.VerifySecrets = v.Bool("verify-secrets")
		o.VerifyTimeout = v.Duration("verify-timeout")
	}
	sourceOptionsFrom(v, &o)
	if v.Has("spank-option") {
		for _, s := range v.List("spank-option") {
			spec, err := parseSpank(s)
			if err != nil {
				return o, fmt.Errorf("%s: %w", v.Value("spank-option").Where, err)
			}
			o.Spank = append(o.Spank, spec)
		}
	}
	if v.Has("policy") {
		specs, err := policyFiles(v.List("policy"))
		if err != nil {
			return o, err
		}
		o.Policies = append(o.Policies, specs...)
	}
	if v.Has("vex") {
		o.VEX = v.List("vex")
		if val := v.Value("vex"); val.Source == config.FromConfig {
			o.VEX = slices.Clone(o.VEX)
			for i, p := range o.VEX {
				if !filepath.IsAbs(p) {
					o.VEX[i] = filepath.Join(v.File().Dir(), p)
				}
			}
		}
	}
	if f := v.File(); f != nil {
		var err error
		if o.Signatures, err = signaturesPolicy(f); err != nil {
			return o, err
		}
		// A scanned directory's own config may add policies to the
		// user's --policy files, never take one away: policies only add
		// findings (docs/policies.md).
		specs, err := configPolicies(f)
		if err != nil {
			return o, err
		}
		o.Policies = append(o.Policies, specs...)
	}
	return o, nil
}

// parseSpank reads a --spank-option value: NAME, or NAME= when the option
// takes a value.
func parseSpank(s string) (slurm.OptionSpec, error) {
	name, takesValue := strings.CutSuffix(s, "=")
	if strings.TrimLeft(name, "-") == "" || strings.ContainsAny(name, "= \t") {
		return slurm.OptionSpec{}, fmt.Errorf("%q is not NAME or NAME=", s)
	}
	return slurm.SpankOption(name, takesValue), nil
}

// FewSmallFiles reports whether the targets are a handful of small local
// files (a pre-commit hook's), where compiling every secret rule up front
// costs more than the scan (Options.LazySecretRules).
func FewSmallFiles(targets []string) bool {
	if len(targets) == 0 || len(targets) > 8 {
		return false
	}
	var total int64
	for _, t := range targets {
		fi, err := os.Stat(t)
		if err != nil || !fi.Mode().IsRegular() {
			return false // a directory, another scheme, or nothing
		}
		total += fi.Size()
	}
	return total <= 256<<10
}
