package signatures

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// Policy says which images and models must be signed and by whom, in the
// spirit of sigstore policy-controller's ClusterImagePolicy: each entry
// matches by glob and lists authorities, any one of which suffices. The
// lead embeds it under the key `signatures:` of .mlwarden.yaml:
//
//	signatures:
//	  trustedRoot: /etc/mlwarden/trusted_root.json   # for keyless authorities
//	  images:
//	    - glob: "registry.internal/ml/**"
//	      authorities:
//	        - key: /etc/mlwarden/cosign.pub
//	        - keyless:
//	            identities:
//	              - issuer: https://token.actions.githubusercontent.com
//	                subjectRegExp: ^https://github\.com/org/
//	  models:
//	    - path: "models/**"            # model directories, relative to the target
//	      mode: enforce                # enforce (default): unsigned is high; warn: info
//	      authorities:
//	        - key: keys/model-signing.pub
//	        - certificateChain: [keys/ca.pem]
//	      ignorePaths: [README.md]
//
// Relative file names are resolved against the directory of the config
// file by the caller (see Policy.Resolve).
type Policy struct {
	// TrustedRoot is the default trusted_root.json for keyless authorities.
	TrustedRoot string        `yaml:"trustedRoot,omitempty" json:"trustedRoot,omitempty"`
	Images      []ImagePolicy `yaml:"images,omitempty" json:"images,omitempty"`
	Models      []ModelPolicy `yaml:"models,omitempty" json:"models,omitempty"`
}

// ImagePolicy requires images whose reference matches Glob to be signed.
type ImagePolicy struct {
	// Glob matches the image reference: "*" within a path segment, "**"
	// across segments ("registry.internal/ml/**").
	Glob        string      `yaml:"glob" json:"glob"`
	Mode        string      `yaml:"mode,omitempty" json:"mode,omitempty"`
	Authorities []Authority `yaml:"authorities" json:"authorities"`
	// AttestationType, when set, also requires a verified attestation of
	// that predicate type (a URI or a cosign short name).
	AttestationType string `yaml:"attestationType,omitempty" json:"attestationType,omitempty"`
}

// ModelPolicy requires model directories matching Path to carry a valid
// OpenSSF model signature.
type ModelPolicy struct {
	// Path is a glob of model directories relative to the target root
	// ("models/*", "**" for every directory, "." for the root).
	Path        string      `yaml:"path" json:"path"`
	Mode        string      `yaml:"mode,omitempty" json:"mode,omitempty"`
	Authorities []Authority `yaml:"authorities" json:"authorities"`
	// Signature is the signature file name in the model directory (model.sig).
	Signature   string   `yaml:"signature,omitempty" json:"signature,omitempty"`
	IgnorePaths []string `yaml:"ignorePaths,omitempty" json:"ignorePaths,omitempty"`
	// IgnoreUnsignedFiles does not report files the signature does not name.
	IgnoreUnsignedFiles bool `yaml:"ignoreUnsignedFiles,omitempty" json:"ignoreUnsignedFiles,omitempty"`
}

// Authority is one trusted signer: a public key, a certificate chain
// (model signatures), or keyless identities under a trusted root.
type Authority struct {
	Name             string   `yaml:"name,omitempty" json:"name,omitempty"`
	Key              string   `yaml:"key,omitempty" json:"key,omitempty"`
	CertificateChain []string `yaml:"certificateChain,omitempty" json:"certificateChain,omitempty"`
	Keyless          *Keyless `yaml:"keyless,omitempty" json:"keyless,omitempty"`
}

// Keyless trusts Sigstore certificates for the identities, under a trusted
// root (the policy's trustedRoot when empty).
type Keyless struct {
	TrustedRoot string           `yaml:"trustedRoot,omitempty" json:"trustedRoot,omitempty"`
	Identities  []trust.Identity `yaml:"identities" json:"identities"`
}

// Resolve makes the policy's relative file names relative to dir (the
// config file's directory).
func (p Policy) Resolve(dir string) Policy {
	abs := func(f string) string {
		if f == "" || path.IsAbs(f) || dir == "" {
			return f
		}
		return path.Join(dir, f)
	}
	fix := func(as []Authority) []Authority {
		out := make([]Authority, len(as))
		for i, a := range as {
			a.Key = abs(a.Key)
			var cc []string
			for _, c := range a.CertificateChain {
				cc = append(cc, abs(c))
			}
			a.CertificateChain = cc
			if a.Keyless != nil {
				k := *a.Keyless
				k.TrustedRoot = abs(k.TrustedRoot)
				a.Keyless = &k
			}
			out[i] = a
		}
		return out
	}
	p.TrustedRoot = abs(p.TrustedRoot)
	p.Images = append([]ImagePolicy(nil), p.Images...)
	for i := range p.Images {
		p.Images[i].Authorities = fix(p.Images[i].Authorities)
	}
	p.Models = append([]ModelPolicy(nil), p.Models...)
	for i := range p.Models {
		p.Models[i].Authorities = fix(p.Models[i].Authorities)
	}
	return p
}

// loadedAuthority is an Authority with its files read.
type loadedAuthority struct {
	name       string
	key        crypto.PublicKey
	chain      []*x509.Certificate
	root       root.TrustedMaterial
	identities []trust.Identity
}

type loadedPolicy struct {
	images []loadedImage
	models []loadedModel
}

type loadedImage struct {
	ImagePolicy
	re   *regexp.Regexp
	auth []loadedAuthority
}

type loadedModel struct {
	ModelPolicy
	re   *regexp.Regexp
	auth []loadedAuthority
}

func (p Policy) load() (*loadedPolicy, error) {
	roots := map[string]root.TrustedMaterial{}
	loadAuth := func(where string, as []Authority) ([]loadedAuthority, error) {
		if len(as) == 0 {
			return nil, fmt.Errorf("%s: no authorities (a policy without a trusted signer would trust no one; list a key, certificateChain or keyless identity)", where)
		}
		var out []loadedAuthority
		for i, a := range as {
			la := loadedAuthority{name: a.Name}
			if la.name == "" {
				la.name = fmt.Sprintf("authority %d", i+1)
			}
			n := 0
			if a.Key != "" {
				n++
				k, err := trust.LoadPublicKey(a.Key)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				la.key = k
			}
			if len(a.CertificateChain) > 0 {
				n++
				cs, err := trust.LoadCertificates(a.CertificateChain...)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				la.chain = cs
			}
			if a.Keyless != nil {
				n++
				if len(a.Keyless.Identities) == 0 {
					return nil, fmt.Errorf("%s: keyless authority without identities (that would trust anyone)", where)
				}
				for _, id := range a.Keyless.Identities {
					if err := id.Validate(); err != nil {
						return nil, fmt.Errorf("%s: %w", where, err)
					}
				}
				rp := a.Keyless.TrustedRoot
				if rp == "" {
					rp = p.TrustedRoot
				}
				if rp == "" {
					return nil, fmt.Errorf("%s: keyless authority needs a trustedRoot (trusted_root.json); mlwarden never fetches one", where)
				}
				if roots[rp] == nil {
					tr, err := trust.LoadTrustedRoot(rp)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", where, err)
					}
					roots[rp] = tr
				}
				la.root, la.identities = roots[rp], a.Keyless.Identities
			}
			if n != 1 {
				return nil, fmt.Errorf("%s: %s must have exactly one of key, certificateChain, keyless", where, la.name)
			}
			out = append(out, la)
		}
		return out, nil
	}
	lp := &loadedPolicy{}
	for i, ip := range p.Images {
		where := fmt.Sprintf("signatures.images[%d] (%s)", i, ip.Glob)
		if err := checkMode(ip.Mode); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		re, err := globRegexp(ip.Glob)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		as, err := loadAuth(where, ip.Authorities)
		if err != nil {
			return nil, err
		}
		lp.images = append(lp.images, loadedImage{ip, re, as})
	}
	for i, mp := range p.Models {
		where := fmt.Sprintf("signatures.models[%d] (%s)", i, mp.Path)
		if err := checkMode(mp.Mode); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		re, err := globRegexp(strings.Trim(mp.Path, "/"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		as, err := loadAuth(where, mp.Authorities)
		if err != nil {
			return nil, err
		}
		lp.models = append(lp.models, loadedModel{mp, re, as})
	}
	return lp, nil
}

func checkMode(m string) error {
	switch m {
	case "", "enforce", "warn":
		return nil
	}
	return fmt.Errorf("mode %q: want enforce or warn", m)
}

// globRegexp compiles a glob: "**" any characters, "*" any but '/', "?"
// one character but '/'.
func globRegexp(g string) (*regexp.Regexp, error) {
	if g == "" {
		return nil, errors.New("empty glob")
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c == '*' && i+1 < len(g) && g[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

func (lp *loadedPolicy) image(ref string, alt ...string) *loadedImage {
	for i := range lp.images {
		for _, r := range append([]string{ref}, alt...) {
			if lp.images[i].re.MatchString(r) {
				return &lp.images[i]
			}
		}
	}
	return nil
}

func (lp *loadedPolicy) model(dir string) *loadedModel {
	for i := range lp.models {
		if lp.models[i].re.MatchString(dir) {
			return &lp.models[i]
		}
	}
	return nil
}
