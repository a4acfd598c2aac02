package rules

// The secrets check's rules: gitleaks' config format plus mlwarden metadata.

import (
	"embed"
	"fmt"
	"io/fs"

	"github.com/pelletier/go-toml/v2"
)

// SecretsFile is the name of the secrets rule file inside a rules fs.FS.
const SecretsFile = "secrets.toml"

//go:embed secrets.toml
var secretsFS embed.FS

// SecretsFS returns the built-in secrets rule file (SecretsFile) as an fs.FS.
func SecretsFS() fs.FS { return secretsFS }

// Secrets is a secrets rule file: a gitleaks config (TOML) plus mlwarden's
// metadata, which gitleaks ignores.
type Secrets struct {
	// TOML is the file as gitleaks reads it.
	TOML []byte
	// Names maps a gitleaks rule id to mlwarden's stable rule name where they
	// differ.
	Names map[string]string
	// Severity maps a gitleaks rule id to a severity name.
	Severity map[string]string
	// Fix maps a gitleaks rule id to how to fix a leak it found.
	Fix map[string]string
}

// secretsMeta is the part of the file that is mlwarden's, not gitleaks'.
type secretsMeta struct {
	Mlwarden struct {
		Names    map[string]string `toml:"names"`
		Severity map[string]string `toml:"severity"`
	} `toml:"mlwarden"`
	Rules []struct {
		ID       string `toml:"id"`
		Severity string `toml:"severity"`
		Fix      string `toml:"fix"`
	} `toml:"rules"`
}

// LoadSecrets reads the secrets rule file from fsys (SecretsFS() for the
// built-in rules).
func LoadSecrets(fsys fs.FS) (*Secrets, error) {
	b, err := fs.ReadFile(fsys, SecretsFile)
	if err != nil {
		return nil, fmt.Errorf("read secrets rules: %w", err)
	}
	return ParseSecrets(b)
}

// ParseSecrets reads a secrets rule file's mlwarden metadata. The gitleaks
// part is parsed by the secrets check. go-toml, not BurntSushi's: the
// built-in file is read by every process that builds the secrets check
// (the per-job sbatch hook too), and go-toml reads it about ten times
// faster.
func ParseSecrets(b []byte) (*Secrets, error) {
	var m secretsMeta
	if err := toml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse secrets rules: %w", err)
	}
	s := &Secrets{TOML: b, Names: map[string]string{}, Severity: map[string]string{}, Fix: map[string]string{}}
	for k, v := range m.Mlwarden.Names {
		s.Names[k] = v
	}
	for k, v := range m.Mlwarden.Severity {
		s.Severity[k] = v
	}
	for _, r := range m.Rules {
		if r.Severity != "" {
			s.Severity[r.ID] = r.Severity
		}
		if r.Fix != "" {
			s.Fix[r.ID] = r.Fix
		}
	}
	return s, nil
}
