// Package modelsig verifies OpenSSF model signatures (the sigstore
// model-transparency format, model.sig): a Sigstore bundle holding a DSSE
// envelope whose in-toto statement lists every file (or shard) of a model
// with its digest.
//
// The bundle is parsed here by hand, leniently: sigstore-go refuses
// certificate-chain bundles without an option and cannot parse the key
// bundles written before model_signing v1.0 (publicKey.rawBytes). Keyless
// (Sigstore) bundles are handed to sigstore-go.
package modelsig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// Errors a verification can wrap (the signatures check's common ones).
var (
	ErrInvalid     = trust.ErrInvalid
	ErrIdentity    = trust.ErrIdentity
	ErrUnsupported = trust.ErrUnsupported
)

const (
	bundleMediaType  = "application/vnd.dev.sigstore.bundle.v0.3+json"
	inTotoPayload    = "application/vnd.in-toto+json"
	statementType    = "https://in-toto.io/Statement/v1"
	predicateV1      = "https://model_signing/signature/v1.0"
	predicateCompat  = "https://model_signing/Digests/v0.1"
	maxSignatureSize = 64 << 20
)

// Method is how a signature was made.
type Method string

// Signing methods of model_signing.
const (
	MethodKey         Method = "key"
	MethodCertificate Method = "certificate"
	MethodSigstore    Method = "sigstore"
)

type rawBytes struct {
	RawBytes string `json:"rawBytes"`
}

// rawBundle is the lenient view of the Sigstore bundle JSON.
type rawBundle struct {
	MediaType            string `json:"mediaType"`
	VerificationMaterial struct {
		PublicKey *struct {
			Hint     string `json:"hint"`
			RawBytes string `json:"rawBytes"`
		} `json:"publicKey"`
		X509CertificateChain *struct {
			Certificates []rawBytes `json:"certificates"`
		} `json:"x509CertificateChain"`
		Certificate *rawBytes         `json:"certificate"`
		TlogEntries []json.RawMessage `json:"tlogEntries"`
	} `json:"verificationMaterial"`
	DSSEEnvelope *struct {
		Payload     string `json:"payload"`
		PayloadType string `json:"payloadType"`
		Signatures  []struct {
			Sig   string `json:"sig"`
			KeyID string `json:"keyid"`
		} `json:"signatures"`
	} `json:"dsseEnvelope"`
}

// Signature is a parsed model.sig, not yet verified.
type Signature struct {
	Method      Method
	MediaType   string
	KeyHint     string
	Chain       []*x509.Certificate // leaf first (certificate and sigstore methods)
	PayloadType string
	Payload     []byte
	Sig         []byte
	raw         []byte
}

// ParseSignature reads a model.sig file. It checks the shape only.
func ParseSignature(data []byte) (*Signature, error) {
	if len(data) > maxSignatureSize {
		return nil, fmt.Errorf("%w: signature file larger than %d bytes", ErrInvalid, maxSignatureSize)
	}
	var b rawBundle
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%w: not a Sigstore bundle: %v", ErrInvalid, err)
	}
	if b.DSSEEnvelope == nil {
		return nil, fmt.Errorf("%w: bundle has no DSSE envelope", ErrInvalid)
	}
	if n := len(b.DSSEEnvelope.Signatures); n != 1 {
		return nil, fmt.Errorf("%w: DSSE envelope has %d signatures, want exactly 1", ErrInvalid, n)
	}
	s := &Signature{MediaType: b.MediaType, PayloadType: b.DSSEEnvelope.PayloadType, raw: data}
	var err error
	if s.Payload, err = base64.StdEncoding.DecodeString(b.DSSEEnvelope.Payload); err != nil {
		return nil, fmt.Errorf("%w: DSSE payload is not base64: %v", ErrInvalid, err)
	}
	if s.Sig, err = base64.StdEncoding.DecodeString(b.DSSEEnvelope.Signatures[0].Sig); err != nil {
		return nil, fmt.Errorf("%w: DSSE signature is not base64: %v", ErrInvalid, err)
	}
	vm := b.VerificationMaterial
	var certs []rawBytes
	switch {
	case vm.PublicKey != nil:
		s.Method, s.KeyHint = MethodKey, vm.PublicKey.Hint
	case vm.X509CertificateChain != nil:
		s.Method, certs = MethodCertificate, vm.X509CertificateChain.Certificates
	case vm.Certificate != nil:
		s.Method, certs = MethodSigstore, []rawBytes{*vm.Certificate}
	default:
		return nil, fmt.Errorf("%w: bundle has no public key or certificate", ErrInvalid)
	}
	// A chain with transparency-log entries is a keyless (Sigstore) bundle of
	// the v0.1/v0.2 bundle format.
	if s.Method == MethodCertificate && len(vm.TlogEntries) > 0 {
		s.Method = MethodSigstore
	}
	for i, c := range certs {
		der, err := base64.StdEncoding.DecodeString(c.RawBytes)
		if err != nil {
			return nil, fmt.Errorf("%w: certificate %d is not base64: %v", ErrInvalid, i, err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("%w: certificate %d: %v", ErrInvalid, i, err)
		}
		s.Chain = append(s.Chain, cert)
	}
	if s.Method != MethodKey && len(s.Chain) == 0 {
		return nil, fmt.Errorf("%w: empty certificate chain", ErrInvalid)
	}
	return s, nil
}

// PAE is DSSE's pre-authentication encoding.
func PAE(payloadType string, payload []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "DSSEv1 %d %s %d ", len(payloadType), payloadType, len(payload))
	b.Write(payload)
	return b.Bytes()
}

// paeCompat is what model_signing v0.2 signed by mistake: "DSSEV1 ..." with
// the payload written as Python's repr() of a bytes object.
func paeCompat(payloadType string, payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEV1 %d %s %d %s", len(payloadType), payloadType, len(payload), pyBytesRepr(payload))
}

// pyBytesRepr is Python's repr(bytes).
func pyBytesRepr(b []byte) string {
	q := byte('\'')
	if bytes.IndexByte(b, '\'') >= 0 && bytes.IndexByte(b, '"') < 0 {
		q = '"'
	}
	var s bytes.Buffer
	s.WriteByte('b')
	s.WriteByte(q)
	for _, c := range b {
		switch {
		case c == q || c == '\\':
			s.WriteByte('\\')
			s.WriteByte(c)
		case c == '\t':
			s.WriteString(`\t`)
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\r':
			s.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&s, `\x%02x`, c)
		default:
			s.WriteByte(c)
		}
	}
	s.WriteByte(q)
	return s.String()
}

// KeyHint is model_signing's public key identifier: the hex SHA-256 of the
// key's PEM SubjectPublicKeyInfo.
func KeyHint(pub *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return hex.EncodeToString(sum[:]), nil
}

func curveHash(c elliptic.Curve) hash.Hash {
	switch c.Params().BitSize {
	case 384:
		return sha512.New384()
	case 521:
		return sha512.New()
	}
	return sha256.New()
}

// verifyECDSA checks sig over the PAE of the payload with the curve's hash,
// then the v0.2 compatible forms.
func (s *Signature) verifyECDSA(pub *ecdsa.PublicKey) bool {
	for _, msg := range [][]byte{PAE(s.PayloadType, s.Payload), paeCompat(s.PayloadType, s.Payload)} {
		for _, h := range []hash.Hash{curveHash(pub.Curve), sha256.New()} {
			h.Write(msg)
			if ecdsa.VerifyASN1(pub, h.Sum(nil), s.Sig) {
				return true
			}
		}
	}
	return false
}

// keyAlgorithm refuses key bundles whose hint names a key type other than
// ECDSA: model_signing v1.1 hints ML-DSA keys as "ML_DSA_65:<digest>",
// ECDSA keys by the bare hex digest.
func (s *Signature) keyAlgorithm() error {
	if alg, _, ok := strings.Cut(s.KeyHint, ":"); ok {
		return fmt.Errorf("%w: signed with a %s key; only ECDSA keys are supported", ErrUnsupported, alg)
	}
	return nil
}

// VerifyKey checks a key-method signature against pub.
func (s *Signature) VerifyKey(pub *ecdsa.PublicKey) error {
	if s.Method != MethodKey {
		return fmt.Errorf("%w: signature was made with the %s method, not with a key", ErrIdentity, s.Method)
	}
	if err := s.keyAlgorithm(); err != nil {
		return err
	}
	if s.KeyHint != "" {
		h, err := KeyHint(pub)
		if err != nil {
			return err
		}
		if h != s.KeyHint {
			return fmt.Errorf("%w: signed with another key (hint %s…, given key %s…)", ErrIdentity, short(s.KeyHint), short(h))
		}
	}
	if !s.verifyECDSA(pub) {
		return fmt.Errorf("%w: the signature does not verify with the given key", ErrInvalid)
	}
	return nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// VerifyChain checks a certificate-method signature: the leaf chains to one
// of anchors (every certificate given is an anchor, so pinning an
// intermediate CA is allowed) at the leaf's notBefore, as model_signing
// does, and may sign (digitalSignature key usage or codeSigning EKU).
func (s *Signature) VerifyChain(anchors []*x509.Certificate) error {
	if s.Method != MethodCertificate {
		return fmt.Errorf("%w: signature was made with the %s method, not with a certificate chain", ErrIdentity, s.Method)
	}
	if len(anchors) == 0 {
		return errors.New("no trusted certificates given for the certificate method")
	}
	leaf := s.Chain[0]
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range anchors {
		roots.AddCert(c)
	}
	for _, c := range s.Chain[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: inter, CurrentTime: leaf.NotBefore.Add(time.Second),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}); err != nil {
		return fmt.Errorf("%w: signing certificate %q does not chain to the trusted certificates: %v", ErrIdentity, leaf.Subject.String(), err)
	}
	usable := leaf.KeyUsage&x509.KeyUsageDigitalSignature != 0
	for _, u := range leaf.ExtKeyUsage {
		usable = usable || u == x509.ExtKeyUsageCodeSigning
	}
	if !usable {
		return fmt.Errorf("%w: signing certificate may not sign (no digitalSignature key usage or codeSigning EKU)", ErrInvalid)
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return fmt.Errorf("%w: signing certificate key is %T, want ECDSA", ErrUnsupported, leaf.PublicKey)
	}
	if !s.verifyECDSA(pub) {
		return fmt.Errorf("%w: the signature does not verify with the certificate's key", ErrInvalid)
	}
	return nil
}

// Statement is the signed in-toto statement, reduced to what verification uses.
type Statement struct {
	PredicateType string
	ModelName     string
	RootDigest    string
	Serialization Serialization
	Resources     []Resource
}

// Serialization is how the model was turned into resources.
type Serialization struct {
	Method        string   `json:"method"`
	HashType      string   `json:"hash_type"`
	AllowSymlinks bool     `json:"allow_symlinks"`
	ShardSize     int64    `json:"-"`
	IgnorePaths   []string `json:"ignore_paths"`
}

// Resource is one signed file or shard.
type Resource struct {
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"`
	Digest    string `json:"digest"`
}

// ParseStatement reads and checks the DSSE payload: statement type,
// predicate type, one subject whose digest is the SHA-256 of the resources'
// digests, and safe, unique resource names.
func ParseStatement(payloadType string, payload []byte) (*Statement, error) {
	if payloadType != inTotoPayload {
		return nil, fmt.Errorf("%w: DSSE payload type %q, want %q", ErrInvalid, payloadType, inTotoPayload)
	}
	var raw struct {
		Type          string `json:"_type"`
		PredicateType string `json:"predicateType"`
		Subject       []struct {
			Name   string            `json:"name"`
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		Predicate struct {
			Serialization map[string]any `json:"serialization"`
			Resources     []Resource     `json:"resources"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, fmt.Errorf("%w: statement is not JSON: %v", ErrInvalid, err)
	}
	if raw.Type != statementType {
		return nil, fmt.Errorf("%w: statement type %q, want %q", ErrInvalid, raw.Type, statementType)
	}
	st := &Statement{PredicateType: raw.PredicateType}
	switch raw.PredicateType {
	case predicateCompat:
		// v0.2: every file is a subject; files method, SHA-256.
		st.Serialization = Serialization{Method: "files", HashType: "sha256"}
		for _, sub := range raw.Subject {
			st.Resources = append(st.Resources, Resource{Name: sub.Name, Algorithm: "sha256", Digest: sub.Digest["sha256"]})
		}
	case predicateV1:
		if len(raw.Subject) != 1 {
			return nil, fmt.Errorf("%w: statement has %d subjects, want 1", ErrInvalid, len(raw.Subject))
		}
		st.ModelName, st.RootDigest = raw.Subject[0].Name, raw.Subject[0].Digest["sha256"]
		st.Resources = raw.Predicate.Resources
		ser, err := parseSerialization(raw.Predicate.Serialization)
		if err != nil {
			return nil, err
		}
		st.Serialization = ser
		h := sha256.New()
		for _, r := range st.Resources {
			d, err := hex.DecodeString(r.Digest)
			if err != nil {
				return nil, fmt.Errorf("%w: resource %q digest is not hex", ErrInvalid, r.Name)
			}
			h.Write(d)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != st.RootDigest {
			return nil, fmt.Errorf("%w: resources hash to %s but the subject says %s", ErrInvalid, got, st.RootDigest)
		}
	default:
		return nil, fmt.Errorf("%w: predicate type %q is not a model signature", ErrInvalid, raw.PredicateType)
	}
	seen := map[string]bool{}
	for _, r := range st.Resources {
		if err := checkResourceName(r.Name, st.Serialization.Method); err != nil {
			return nil, fmt.Errorf("%w: resource %q: %v", ErrInvalid, r.Name, err)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("%w: resource %q listed twice", ErrInvalid, r.Name)
		}
		seen[r.Name] = true
		if _, err := hex.DecodeString(r.Digest); err != nil || r.Digest == "" {
			return nil, fmt.Errorf("%w: resource %q digest is not hex", ErrInvalid, r.Name)
		}
	}
	return st, nil
}

func parseSerialization(m map[string]any) (Serialization, error) {
	var s Serialization
	str := func(k string) string { v, _ := m[k].(string); return v }
	s.Method, s.HashType = str("method"), str("hash_type")
	switch v := m["allow_symlinks"].(type) {
	case bool:
		s.AllowSymlinks = v
	case string:
		s.AllowSymlinks, _ = strconv.ParseBool(v)
	}
	if ips, ok := m["ignore_paths"].([]any); ok {
		for _, p := range ips {
			if ps, ok := p.(string); ok {
				s.IgnorePaths = append(s.IgnorePaths, ps)
			}
		}
	}
	switch s.Method {
	case "files":
	case "shards":
		switch v := m["shard_size"].(type) {
		case float64: // written as 8.0 by some versions
			s.ShardSize = int64(v)
		case string:
			s.ShardSize, _ = strconv.ParseInt(v, 10, 64)
		}
		if s.ShardSize <= 0 {
			return s, fmt.Errorf("%w: shards serialization without a positive shard_size", ErrInvalid)
		}
	default:
		return s, fmt.Errorf("%w: serialization method %q", ErrUnsupported, s.Method)
	}
	switch s.HashType {
	case "sha256", "blake2":
	case "":
		s.HashType = "sha256"
	default:
		return s, fmt.Errorf("%w: hash type %q", ErrUnsupported, s.HashType)
	}
	return s, nil
}
