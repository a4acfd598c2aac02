package verdict

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
)

// Media and predicate types of a verdict attestation in the registry.
const (
	// ArtifactType is the referrer's artifact type (its config media type).
	ArtifactType = "application/vnd.mlwarden.verdict.v1+json"
	// PredicateType is the in-toto predicate type of the verdict.
	PredicateType = "https://mlwarden.dev/verdict/v1"
	// DSSEMediaType is the layer holding the signed envelope.
	DSSEMediaType = "application/vnd.dsse.envelope.v1+json"
	inTotoPayload = "application/vnd.in-toto+json"
	inTotoV1      = "https://in-toto.io/Statement/v1"

	annRulesVersion = "dev.mlwarden.verdict.rules-version"
	annCreated      = "org.opencontainers.image.created"
)

// maxEnvelopeBytes bounds a verdict envelope read back from a registry.
const maxEnvelopeBytes = 8 << 20

// Referrers keeps verdicts in the registry itself, as a DSSE-signed in-toto
// attestation pushed as an OCI referrer of the scanned digest (or, on a
// registry without the referrers API, under the sha256-<hex> fallback tag).
// Every replica and every cluster then reads the same verdict from where
// the image is, with no database of its own. Verdicts whose signature does
// not verify with the configured key are ignored.
type Referrers struct {
	signer   signature.Signer
	verifier signature.Verifier
	remote   []remote.Option
	now      func() time.Time
}

// ReferrersOption configures a Referrers store.
type ReferrersOption func(*Referrers)

// WithSigner signs verdicts written (without one, Put fails: the store is
// read-only).
func WithSigner(s signature.Signer) ReferrersOption { return func(r *Referrers) { r.signer = s } }

// WithVerifier verifies verdicts read (required).
func WithVerifier(v signature.Verifier) ReferrersOption { return func(r *Referrers) { r.verifier = v } }

// WithRemoteOptions sets how the registry is reached (auth, transport).
func WithRemoteOptions(o ...remote.Option) ReferrersOption {
	return func(r *Referrers) { r.remote = append(r.remote, o...) }
}

// NewReferrers returns a registry-backed verdict store.
func NewReferrers(opts ...ReferrersOption) (*Referrers, error) {
	r := &Referrers{now: time.Now}
	for _, o := range opts {
		o(r)
	}
	if r.verifier == nil {
		return nil, errors.New("verdict referrers: a public key to verify verdicts is required")
	}
	return r, nil
}

type inTotoSubject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

type inTotoStatement struct {
	Type          string          `json:"_type"`
	Subject       []inTotoSubject `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

func (r *Referrers) opts(ctx context.Context) []remote.Option {
	return append([]remote.Option{remote.WithContext(ctx)}, r.remote...)
}

// Put implements Store: it signs v and pushes it as a referrer of ref.
func (r *Referrers) Put(ctx context.Context, ref name.Digest, v *Verdict) error {
	if r.signer == nil {
		return errors.New("verdict referrers: no signing key configured")
	}
	subject, err := remote.Head(ref, r.opts(ctx)...)
	if err != nil {
		return fmt.Errorf("verdict subject %s: %w", ref, err)
	}
	pred, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode verdict: %w", err)
	}
	alg, hex, _ := strings.Cut(ref.DigestStr(), ":")
	stmt, err := json.Marshal(inTotoStatement{
		Type:          inTotoV1,
		Subject:       []inTotoSubject{{Name: ref.Context().Name(), Digest: map[string]string{alg: hex}}},
		PredicateType: PredicateType,
		Predicate:     pred,
	})
	if err != nil {
		return fmt.Errorf("encode statement: %w", err)
	}
	env, err := dsse.WrapSigner(r.signer, inTotoPayload).SignMessage(bytes.NewReader(stmt))
	if err != nil {
		return fmt.Errorf("sign verdict: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(env, DSSEMediaType))
	if err != nil {
		return fmt.Errorf("build verdict manifest: %w", err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ArtifactType)
	img = mutate.Annotations(img, map[string]string{
		annRulesVersion: v.RulesVersion,
		annCreated:      v.ScannedAt.UTC().Format(time.RFC3339Nano),
	}).(v1.Image)
	img = mutate.Subject(img, *subject).(v1.Image)
	dig, err := img.Digest()
	if err != nil {
		return fmt.Errorf("verdict manifest digest: %w", err)
	}
	if err := remote.Write(ref.Context().Digest(dig.String()), img, r.opts(ctx)...); err != nil {
		return fmt.Errorf("push verdict for %s: %w", ref, err)
	}
	return nil
}

// Get implements Store: it lists ref's verdict referrers, newest first, and
// returns the first whose signature verifies, whose statement names ref's
// digest and whose rules version matches.
func (r *Referrers) Get(ctx context.Context, ref name.Digest, rulesVersion string) (*Verdict, error) {
	idx, err := remote.Referrers(ref, append(r.opts(ctx), remote.WithFilter("artifactType", ArtifactType))...)
	if err != nil {
		return nil, fmt.Errorf("list verdicts of %s: %w", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("list verdicts of %s: %w", ref, err)
	}
	var cands []v1.Descriptor
	for _, d := range im.Manifests {
		if d.ArtifactType == ArtifactType && d.Annotations[annRulesVersion] == rulesVersion {
			cands = append(cands, d)
		}
	}
	slices.SortFunc(cands, func(a, b v1.Descriptor) int {
		return strings.Compare(b.Annotations[annCreated], a.Annotations[annCreated])
	})
	var errs []error
	for _, d := range cands {
		v, err := r.read(ctx, ref, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if v.RulesVersion == rulesVersion {
			return v, nil
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(append([]error{ErrNotFound}, errs...)...)
	}
	return nil, ErrNotFound
}

func (r *Referrers) read(ctx context.Context, ref name.Digest, d v1.Descriptor) (*Verdict, error) {
	img, err := remote.Image(ref.Context().Digest(d.Digest.String()), r.opts(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("fetch verdict %s: %w", d.Digest, err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		return nil, fmt.Errorf("verdict %s: want one layer", d.Digest)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		return nil, fmt.Errorf("verdict %s: %w", d.Digest, err)
	}
	defer rc.Close()
	env, err := io.ReadAll(io.LimitReader(rc, maxEnvelopeBytes))
	if err != nil {
		return nil, fmt.Errorf("verdict %s: %w", d.Digest, err)
	}
	if err := dsse.WrapVerifier(r.verifier).VerifySignature(bytes.NewReader(env), nil); err != nil {
		return nil, fmt.Errorf("verdict %s: signature: %w", d.Digest, err)
	}
	var e struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
	}
	if err := json.Unmarshal(env, &e); err != nil || e.PayloadType != inTotoPayload {
		return nil, fmt.Errorf("verdict %s: not an in-toto envelope", d.Digest)
	}
	payload, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("verdict %s: payload: %w", d.Digest, err)
	}
	var st inTotoStatement
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("verdict %s: statement: %w", d.Digest, err)
	}
	alg, hex, _ := strings.Cut(ref.DigestStr(), ":")
	if st.PredicateType != PredicateType || len(st.Subject) != 1 || st.Subject[0].Digest[alg] != hex {
		return nil, fmt.Errorf("verdict %s: signed for another subject", d.Digest)
	}
	var v Verdict
	if err := json.Unmarshal(st.Predicate, &v); err != nil {
		return nil, fmt.Errorf("verdict %s: predicate: %w", d.Digest, err)
	}
	if v.Digest != ref.DigestStr() {
		return nil, fmt.Errorf("verdict %s: names digest %s", d.Digest, v.Digest)
	}
	return &v, nil
}

// LoadCosignKey reads a private key written by `cosign generate-key-pair`
// (an "ENCRYPTED SIGSTORE PRIVATE KEY" or "ENCRYPTED COSIGN PRIVATE KEY" PEM
// block). It follows cosign's own loader (scrypt/secretbox via
// go-securesystemslib, then PKCS #8) in a few lines instead of importing
// cosign's client package, whose dependency tree (Rekor, TUF, Fulcio) the
// server does not otherwise need.
func LoadCosignKey(path string, password []byte) (signature.SignerVerifier, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	p, _ := pem.Decode(data)
	if p == nil {
		return nil, fmt.Errorf("signing key %s: no PEM block", path)
	}
	if p.Type != "ENCRYPTED SIGSTORE PRIVATE KEY" && p.Type != "ENCRYPTED COSIGN PRIVATE KEY" {
		return nil, fmt.Errorf("signing key %s: unsupported PEM type %q", path, p.Type)
	}
	der, err := encrypted.Decrypt(p.Bytes, password)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: decrypt: %w", path, err)
	}
	pk, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return signature.LoadDefaultSignerVerifier(pk)
}

// LoadPublicKey reads a PEM public key (cosign.pub).
func LoadPublicKey(path string) (signature.Verifier, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read public key: %w", err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	return signature.LoadDefaultVerifier(pub)
}
