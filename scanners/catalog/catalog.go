// Package catalog is the explicit, greppable list of mlwarden's built-in
// checks. There is no registration by init(): adding a check means adding a
// line here.
package catalog

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cuda"
	"github.com/mlwarden/mlwarden/scanners/misconfig"
	"github.com/mlwarden/mlwarden/scanners/models"
	"github.com/mlwarden/mlwarden/scanners/pins"
	"github.com/mlwarden/mlwarden/scanners/secrets"
	"github.com/mlwarden/mlwarden/scanners/signatures"
	"github.com/mlwarden/mlwarden/scanners/slurm"
)

// Names lists the checks, in the order they run and are documented.
func Names() []string {
	return []string{
		scanners.CheckSecrets,
		scanners.CheckPins,
		scanners.CheckModels,
		scanners.CheckSignatures,
		scanners.CheckCUDA,
		scanners.CheckMisconfig,
	}
}

// Options configures the checks.
type Options struct {
	// Checks enables only these (default: all). Names are validated.
	Checks []string
	// SecretsConfig is a user's gitleaks-format rules file, extending ours.
	SecretsConfig string
	Secrets       []secrets.Option
	Pins          []pins.Option
	Models        []models.Option
	CUDA          []cuda.Option
	Signatures    []signatures.Option
	Misconfig     []misconfig.Option
	// Slurm configures the batch-script reading of the misconfig check.
	Slurm []slurm.Option
}

// ParseChecks splits a comma list of checks and validates every name.
func ParseChecks(list string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if c == "all" {
			return Names(), nil
		}
		if !slices.Contains(Names(), c) {
			return nil, fmt.Errorf("unknown check %q (valid: %s, or all)", c, strings.Join(Names(), ", "))
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no checks given (valid: %s, or all)", strings.Join(Names(), ", "))
	}
	return out, nil
}

// New builds the enabled checks.
func New(o Options) ([]scanners.Scanner, error) {
	enabled := o.Checks
	if len(enabled) == 0 {
		enabled = Names()
	}
	for _, c := range enabled {
		if !slices.Contains(Names(), c) {
			return nil, fmt.Errorf("unknown check %q (valid: %s)", c, strings.Join(Names(), ", "))
		}
	}
	on := func(c string) bool { return slices.Contains(enabled, c) }

	var out []scanners.Scanner
	var sec *secrets.Scanner
	if on(scanners.CheckSecrets) || on(scanners.CheckModels) {
		opts := o.Secrets
		if o.SecretsConfig != "" {
			opts = append(opts, secrets.WithConfigFile(o.SecretsConfig))
		}
		var err error
		if sec, err = secrets.New(opts...); err != nil {
			return nil, fmt.Errorf("secrets check: %w", err)
		}
	}
	if on(scanners.CheckSecrets) {
		out = append(out, sec)
	}
	if on(scanners.CheckPins) {
		out = append(out, pins.New(o.Pins...))
	}
	if on(scanners.CheckModels) {
		opts := o.Models
		if on(scanners.CheckSecrets) {
			// Strings inside models (pickled training args, safetensors
			// metadata) go to the secrets check.
			opts = append([]models.Option{models.WithStrings(sec.ScanBytes)}, opts...)
		}
		out = append(out, models.New(opts...))
	}
	if on(scanners.CheckSignatures) {
		s, err := signatures.New(o.Signatures...)
		if err != nil {
			return nil, fmt.Errorf("signatures check: %w", err)
		}
		out = append(out, s)
	}
	if on(scanners.CheckCUDA) {
		s, err := cuda.New(o.CUDA...)
		if err != nil {
			return nil, fmt.Errorf("cuda check: %w", err)
		}
		out = append(out, s)
	}
	if on(scanners.CheckMisconfig) {
		out = append(out, misconfig.New(o.Misconfig...), slurm.New(o.Slurm...))
	}
	return out, nil
}

// Close releases what the checks hold between artifacts (directories the
// signatures check opened). Call it when the run is over.
func Close(scs []scanners.Scanner) {
	for _, s := range scs {
		if c, ok := s.(io.Closer); ok {
			c.Close()
		}
	}
}

// Rules lists every rule of every built-in check, sorted by ID. It builds
// the checks with default options to ask them.
func Rules() ([]scanners.Rule, error) {
	scs, err := New(Options{})
	if err != nil {
		return nil, err
	}
	return RulesOf(scs), nil
}

// RulesOf lists the rules of the given scanners, sorted by ID, each once.
func RulesOf(scs []scanners.Scanner) []scanners.Rule {
	var out []scanners.Rule
	seen := map[string]bool{}
	for _, s := range scs {
		for _, r := range s.Rules() {
			if !seen[r.ID] {
				seen[r.ID] = true
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b scanners.Rule) int { return strings.Compare(a.ID, b.ID) })
	return out
}
