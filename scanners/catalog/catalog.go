// Package catalog is the explicit, greppable list of mlwarden's built-in
// checks. There is no registration by init(): adding a check means adding a
// line here.
package catalog

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/node"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cuda"
	"github.com/mlwarden/mlwarden/scanners/misconfig"
	"github.com/mlwarden/mlwarden/scanners/models"
	"github.com/mlwarden/mlwarden/scanners/pins"
	"github.com/mlwarden/mlwarden/scanners/secrets"
	"github.com/mlwarden/mlwarden/scanners/slurm"
	"github.com/mlwarden/mlwarden/scanners/vulns"
)

// Check is one built-in check: its name and how to build it. A check may
// build more than one scanner (misconfig reads batch scripts with the slurm
// package's scanner too).
type Check struct {
	Name string
	New  func(o Options, b *built) ([]scanners.Scanner, error)
}

// built is what checks built earlier share with later ones: the secrets
// engine, which the models check hands the strings it finds inside models.
type built struct {
	enabled []string
	secrets *secrets.Scanner
}

func (b *built) on(name string) bool { return slices.Contains(b.enabled, name) }

// sharedSecrets builds the secrets engine once, for the secrets check and
// for the models check's strings.
func (b *built) sharedSecrets(o Options) (*secrets.Scanner, error) {
	if b.secrets != nil {
		return b.secrets, nil
	}
	opts := o.Secrets
	if o.SecretsConfig != "" {
		opts = append(opts, secrets.WithConfigFile(o.SecretsConfig))
	}
	sec, err := secrets.New(opts...)
	if err != nil {
		return nil, err
	}
	b.secrets = sec
	return sec, nil
}

func one(s scanners.Scanner) []scanners.Scanner { return []scanners.Scanner{s} }

// Checks is the table of built-in checks, in the order they run and are
// documented. Adding a check means adding a row here (docs/new-check.md).
func Checks() []Check {
	return []Check{
		{scanners.CheckSecrets, func(o Options, b *built) ([]scanners.Scanner, error) {
			sec, err := b.sharedSecrets(o)
			if err != nil || b.on(scanners.CheckModels) {
				return one(sec), err
			}
			// Strings inside model files (pickled training arguments,
			// safetensors and GGUF metadata) reach the secrets check
			// whatever --checks says: without the models check, its
			// parsers run for the strings alone.
			return []scanners.Scanner{sec, models.StringsOnly(sec.ScanBytes, o.Models...)}, nil
		}},
		{scanners.CheckPins, func(o Options, _ *built) ([]scanners.Scanner, error) {
			return one(pins.New(o.Pins...)), nil
		}},
		{scanners.CheckModels, func(o Options, b *built) ([]scanners.Scanner, error) {
			opts := o.Models
			if b.on(scanners.CheckSecrets) {
				// Strings inside models (pickled training args, safetensors
				// metadata) go to the secrets check.
				sec, err := b.sharedSecrets(o)
				if err != nil {
					return nil, err
				}
				opts = append([]models.Option{models.WithStrings(sec.ScanBytes)}, opts...)
			}
			return one(models.New(opts...)), nil
		}},
		{scanners.CheckSignatures, func(o Options, _ *built) ([]scanners.Scanner, error) {
			s, err := newSignatures(o.Signatures)
			return one(s), err
		}},
		{scanners.CheckCUDA, func(o Options, _ *built) ([]scanners.Scanner, error) {
			s, err := cuda.New(o.CUDA...)
			return one(s), err
		}},
		{scanners.CheckMisconfig, func(o Options, _ *built) ([]scanners.Scanner, error) {
			cl, err := newCluster(o.Cluster)
			if err != nil {
				return nil, err
			}
			return append([]scanners.Scanner{misconfig.New(o.Misconfig...), slurm.New(o.Slurm...)}, cl...), nil
		}},
		{scanners.CheckVulns, func(o Options, _ *built) ([]scanners.Scanner, error) {
			s, err := vulns.New(o.Vulns...)
			return one(s), err
		}},
		// The node audit judges what `mlwarden node` read of a running
		// node; in the table it reads no file and describes its rules.
		{scanners.CheckNode, func(Options, *built) ([]scanners.Scanner, error) { return one(node.NewCheck(nil)), nil }},
	}
}

// Names lists the checks, in the order they run and are documented.
func Names() []string {
	var out []string
	for _, c := range Checks() {
		out = append(out, c.Name)
	}
	return out
}

// Built lists the checks this build links, in Names' order: all of them,
// but the signatures check in the sbatch hook's (sbatch.go). "all" and
// an empty list of checks stand for these; asking for one that is not
// built is an error that says so.
func Built() []string {
	return slices.DeleteFunc(Names(), func(c string) bool { return c == scanners.CheckSignatures && !signaturesBuilt })
}

// Options configures the checks.
type Options struct {
	// Checks enables only these (default: Built). Names are validated.
	Checks []string
	// SecretsConfig is a user's gitleaks-format rules file, extending ours.
	SecretsConfig string
	Secrets       []secrets.Option
	Pins          []pins.Option
	Models        []models.Option
	CUDA          []cuda.Option
	Signatures    []SignaturesOption
	Misconfig     []misconfig.Option
	// Slurm configures the batch-script reading of the misconfig check.
	Slurm []slurm.Option
	// Cluster configures its reading of Kubernetes manifests as a whole.
	Cluster []ClusterOption
	Vulns   []vulns.Option
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
			return Built(), nil
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

// New builds the enabled checks, in the table's order.
func New(o Options) ([]scanners.Scanner, error) {
	enabled := o.Checks
	if len(enabled) == 0 {
		enabled = Built()
	}
	for _, c := range enabled {
		if !slices.Contains(Names(), c) {
			return nil, fmt.Errorf("unknown check %q (valid: %s)", c, strings.Join(Names(), ", "))
		}
	}
	b := &built{enabled: enabled}
	var out []scanners.Scanner
	for _, c := range Checks() {
		if !b.on(c.Name) {
			continue
		}
		scs, err := c.New(o, b)
		if err != nil {
			return nil, fmt.Errorf("%s check: %w", c.Name, err)
		}
		out = append(out, scs...)
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
