//go:build !mlwarden_sbatch

package server

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/signatures"
)

// Action is what a policy does when its condition holds.
type Action string

// Actions. A policy left empty inherits from the level above.
const (
	Deny  Action = "deny"
	Warn  Action = "warn"
	Allow Action = "allow"
	// Scan (no-verdict only) scans the image inline within the deadline.
	Scan Action = "scan"
)

// Policy is what the admission webhook enforces. Every field may be left
// empty in a per-namespace override to inherit the server-wide value.
type Policy struct {
	// FailOn denies an image whose verdict has a finding at or above it, and
	// a Pod with a misconfiguration at or above it (default high).
	FailOn string `yaml:"fail-on,omitempty"`
	// Digest is what to do with an image referenced by tag (default warn).
	Digest Action `yaml:"digest,omitempty"`
	// NoVerdict is what to do when no verdict is kept for the digest:
	// deny, warn (and queue a scan) or scan (default: scan inline).
	NoVerdict Action `yaml:"no-verdict,omitempty"`
	// Fallback answers when an image could not be judged: the inline scan
	// missed its deadline or failed, the tag could not be resolved, or the
	// scan is incomplete (deny or warn; default deny: fail closed, so that a
	// registry that stalls, or a scan made to fail, never admits an image
	// unchecked).
	Fallback Action `yaml:"fallback,omitempty"`
	// Signatures is what to do when the signature check fails: deny, warn or
	// allow (default warn; allow when no verifier is configured).
	Signatures Action `yaml:"signatures,omitempty"`
	// Misconfig is what to do with Pod misconfigurations below fail-on
	// (warn or allow; default warn). Those at or above fail-on deny.
	Misconfig Action `yaml:"misconfig,omitempty"`
	// Isolation is what to do with a GPU pod that shares the node's
	// namespaces or mounts /dev, the NVIDIA runtime directories or the
	// container runtime socket: deny, warn or allow (default allow, so
	// that a namespace opts in).
	Isolation Action `yaml:"isolation,omitempty"`
}

// Config is the server's configuration file (--config).
type Config struct {
	Policy `yaml:",inline"`
	// Namespaces override the policy per namespace.
	Namespaces map[string]Policy `yaml:"namespaces,omitempty"`
	// SignaturePolicy says which images must be signed and by whom, in the
	// format of .mlwarden.yaml's signatures section. A failed check is
	// answered as Policy.Signatures says.
	SignaturePolicy signatures.Policy `yaml:"signature-policy,omitempty"`
	// ScanDeadline bounds an inline scan; keep it below the webhook's
	// timeoutSeconds (default 7s for the 10s timeout in deploy/).
	ScanDeadline time.Duration `yaml:"scan-deadline,omitempty"`
	// TagTTL is how long a tag's resolved digest is reused (default 30s).
	TagTTL time.Duration `yaml:"tag-ttl,omitempty"`
	// Events configures POST /registry/events.
	Events EventsConfig `yaml:"events,omitempty"`
	// Harbor configures the Harbor scanner adapter API (/api/v1).
	Harbor HarborConfig `yaml:"harbor,omitempty"`
	// Workers scan queued images (default 2); QueueSize bounds the queue
	// (default 256).
	Workers   int `yaml:"workers,omitempty"`
	QueueSize int `yaml:"queue-size,omitempty"`
	// Retries is how often a failed queued scan is tried again (default 3),
	// with back-off starting at RetryBackoff (default 2s) and doubling.
	Retries      int           `yaml:"retries,omitempty"`
	RetryBackoff time.Duration `yaml:"retry-backoff,omitempty"`
	// Store configures where verdicts are kept.
	Store StoreConfig `yaml:"store,omitempty"`
	// AllowRegistries are the loopback and private registries the server
	// may contact (HOST: its ports 443 and 80; HOST:PORT; [IPv6]:PORT;
	// path.Match globs in either part). Every other registry on a
	// loopback, private or reserved address is refused, and link-local and
	// metadata addresses always are, after DNS (guard.go). --allow-registry
	// adds to it.
	AllowRegistries []string `yaml:"allow_registries,omitempty"`
	// MaxImages bounds the distinct images one review may name (default
	// 64); a review with more is denied without contacting any registry.
	MaxImages int `yaml:"max-images,omitempty"`
}

// TokenSource is a shared secret compared with a request's
// "Authorization: Bearer TOKEN" (or the bare header value, for clients that
// send a shared secret as is). TokenFile reads it from a file (a mounted
// Secret), TokenEnv from the environment.
type TokenSource struct {
	Token     string `yaml:"token,omitempty"`
	TokenFile string `yaml:"token-file,omitempty"`
	TokenEnv  string `yaml:"token-env,omitempty"`
}

// HarborConfig authenticates Harbor's calls to the scanner adapter API.
// The adapter is served only with a token: without one its endpoints
// answer 403 (an open adapter scans whatever registry a caller names), and
// a token source that gives no token (an unset variable, an empty file) is
// an error at startup. Register the scanner in Harbor with the
// "Bearer" authorization and the same token.
type HarborConfig struct {
	TokenSource `yaml:",inline"`
}

// EventsConfig authenticates the registry's notifications. With no token
// the endpoint is disabled.
type EventsConfig struct {
	TokenSource `yaml:",inline"`
	// Registry, when set, replaces the host the event names (for a registry
	// that knows itself by another name than the server reaches it by).
	Registry string `yaml:"registry,omitempty"`
}

// StoreConfig says where verdicts are kept.
type StoreConfig struct {
	// Path of the bbolt file (default: verdicts kept in memory only).
	Path string `yaml:"path,omitempty"`
	// Referrers also writes each verdict to the registry as a signed OCI
	// referrer of the scanned digest, and reads verdicts from there.
	Referrers bool `yaml:"referrers,omitempty"`
	// Key is the cosign private key that signs verdicts; its password is
	// read from the environment variable KeyPasswordEnv (default
	// COSIGN_PASSWORD). PublicKey verifies the verdicts read back.
	Key            string `yaml:"key,omitempty"`
	KeyPasswordEnv string `yaml:"key-password-env,omitempty"`
	PublicKey      string `yaml:"public-key,omitempty"`
}

// DefaultConfig returns the configuration used without a file.
func DefaultConfig() Config {
	return Config{
		Policy: Policy{
			FailOn:     "high",
			Digest:     Warn,
			NoVerdict:  Scan,
			Fallback:   Deny,
			Signatures: Warn,
			Misconfig:  Warn,
		},
		ScanDeadline: 7 * time.Second,
		TagTTL:       30 * time.Second,
		Workers:      2,
		QueueSize:    256,
		Retries:      3,
		RetryBackoff: 2 * time.Second,
		MaxImages:    DefaultMaxImages,
	}
}

// DefaultMaxImages is Config.MaxImages' default: more distinct images than
// any real Pod runs (the API server's own object limit is 1.5 MiB, room for
// tens of thousands), few enough that one review cannot make the server
// open a connection per image.
const DefaultMaxImages = 64

// LoadConfig reads the server's configuration from a file over the
// defaults: the serve: section of a file in .mlwarden.yaml format (whose
// other keys are the scan settings, read by the scan pipeline), or, when
// the file has no serve: key, the whole file (the form before the section
// existed). Unknown keys are an error naming their line, so that a
// misspelt policy is not silently ignored.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	if HasServeSection(data) {
		c := DefaultConfig()
		if _, err := config.Parse(path, data, append(scan.Owners(), config.Owner{Key: "serve", Into: &c})...); err != nil {
			return Config{}, err
		}
		if err := c.Validate(); err != nil {
			return Config{}, fmt.Errorf("config %s: serve: %w", path, err)
		}
		return c, nil
	}
	return ParseConfig(data)
}

// HasServeSection reports whether a YAML document has a top-level serve
// key: a config file in .mlwarden.yaml format for `mlwarden serve`.
func HasServeSection(data []byte) bool {
	var top map[string]yaml.Node
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, ok := top["serve"]
	return ok
}

// ParseConfig reads a server configuration YAML (the serve section alone)
// over the defaults.
func ParseConfig(data []byte) (Config, error) {
	c := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && err != io.EOF {
		return Config{}, fmt.Errorf("parse config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks the policies and bounds; LoadConfig and ParseConfig call it.
func (c *Config) Validate() error {
	check := func(where string, p Policy) error {
		if p.FailOn != "" {
			if _, err := scanners.ParseSeverity(p.FailOn); err != nil {
				return fmt.Errorf("config %sfail-on: %w", where, err)
			}
		}
		for _, f := range []struct {
			key   string
			v     Action
			valid []Action
		}{
			{"digest", p.Digest, []Action{Deny, Warn, Allow}},
			{"no-verdict", p.NoVerdict, []Action{Deny, Warn, Scan}},
			{"fallback", p.Fallback, []Action{Deny, Warn}},
			{"signatures", p.Signatures, []Action{Deny, Warn, Allow}},
			{"misconfig", p.Misconfig, []Action{Warn, Allow}},
			{"isolation", p.Isolation, []Action{Deny, Warn, Allow}},
		} {
			if f.v == "" {
				continue
			}
			ok := false
			for _, a := range f.valid {
				ok = ok || f.v == a
			}
			if !ok {
				return fmt.Errorf("config %s%s: %q is not one of %v", where, f.key, f.v, f.valid)
			}
		}
		return nil
	}
	if err := check("", c.Policy); err != nil {
		return err
	}
	for ns, p := range c.Namespaces {
		if err := check("namespaces."+ns+".", p); err != nil {
			return err
		}
	}
	if c.Workers < 1 || c.QueueSize < 1 {
		return fmt.Errorf("config: workers and queue-size must be at least 1")
	}
	if c.MaxImages < 0 {
		return fmt.Errorf("config: max-images must be at least 1 (0: the default, %d)", DefaultMaxImages)
	}
	if err := ValidateAllowRegistries(c.AllowRegistries); err != nil {
		return fmt.Errorf("config %w", err)
	}
	return nil
}

// policyFor returns the policy for a namespace: the namespace's override on
// top of the server-wide policy.
func (c *Config) policyFor(ns string) Policy {
	p := c.Policy
	o, ok := c.Namespaces[ns]
	if !ok {
		return p
	}
	if o.FailOn != "" {
		p.FailOn = o.FailOn
	}
	for _, f := range []struct{ dst, src *Action }{
		{&p.Digest, &o.Digest}, {&p.NoVerdict, &o.NoVerdict}, {&p.Fallback, &o.Fallback},
		{&p.Signatures, &o.Signatures}, {&p.Misconfig, &o.Misconfig}, {&p.Isolation, &o.Isolation},
	} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	return p
}

// failOn parses the policy's threshold; validate has checked it.
func (p Policy) failOn() scanners.Severity {
	s, err := scanners.ParseSeverity(p.FailOn)
	if err != nil {
		return scanners.SeverityHigh
	}
	return s
}

// token returns the secret.
func (e TokenSource) token() (string, error) {
	switch {
	case e.Token != "":
		return e.Token, nil
	case e.TokenFile != "":
		b, err := os.ReadFile(e.TokenFile)
		if err != nil {
			return "", fmt.Errorf("read token: %w", err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return "", fmt.Errorf("token-file %s is empty", e.TokenFile)
		}
		return string(bytes.TrimSpace(b)), nil
	case e.TokenEnv != "":
		v := os.Getenv(e.TokenEnv)
		if v == "" {
			return "", fmt.Errorf("token-env: $%s is not set or empty", e.TokenEnv)
		}
		return v, nil
	}
	return "", nil
}
