// Package modelsigtest signs model directories in tests the way
// model_signing v1.x does (key and certificate methods, files and shards
// serializations), so that tests verify real signatures.
package modelsigtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
)

// Resource is one signed file or shard.
type Resource = modelsig.Resource

// Manifest hashes dir as model_signing does: files (shardSize 0) or shards,
// SHA-256, ignoring ignore (relative names, whole directories too).
func Manifest(dir string, shardSize int64, ignore ...string) ([]Resource, error) {
	var out []Resource
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		for _, ig := range ignore {
			if rel == ig || strings.HasPrefix(rel, ig+"/") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if shardSize == 0 {
			sum := sha256.Sum256(data)
			out = append(out, Resource{Name: rel, Algorithm: "sha256", Digest: hex.EncodeToString(sum[:])})
			return nil
		}
		for s := int64(0); s < int64(len(data)); s += shardSize {
			e := min(s+shardSize, int64(len(data)))
			sum := sha256.Sum256(data[s:e])
			out = append(out, Resource{Name: fmt.Sprintf("%s:%d:%d", rel, s, e),
				Algorithm: fmt.Sprintf("sha256-sharded-%d", shardSize), Digest: hex.EncodeToString(sum[:])})
		}
		return nil
	})
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// Statement builds the v1.0 in-toto statement for resources.
func Statement(name string, res []Resource, shardSize int64, ignorePaths []string) []byte {
	h := sha256.New()
	for _, r := range res {
		d, _ := hex.DecodeString(r.Digest)
		h.Write(d)
	}
	ser := map[string]any{"method": "files", "hash_type": "sha256", "allow_symlinks": false, "ignore_paths": ignorePaths}
	if shardSize > 0 {
		ser["method"], ser["shard_size"] = "shards", float64(shardSize)
	}
	st := map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": name, "digest": map[string]string{"sha256": hex.EncodeToString(h.Sum(nil))}}},
		"predicateType": "https://model_signing/signature/v1.0",
		"predicate":     map[string]any{"serialization": ser, "resources": res},
	}
	b, _ := json.Marshal(st)
	return b
}

func signPAE(key *ecdsa.PrivateKey, payload []byte) ([]byte, error) {
	sum := sha256.Sum256(modelsig.PAE("application/vnd.in-toto+json", payload))
	return ecdsa.SignASN1(rand.Reader, key, sum[:])
}

func bundleJSON(vm map[string]any, payload, sig []byte) []byte {
	b, _ := json.Marshal(map[string]any{
		"mediaType":            "application/vnd.dev.sigstore.bundle.v0.3+json",
		"verificationMaterial": vm,
		"dsseEnvelope": map[string]any{
			"payload":     base64.StdEncoding.EncodeToString(payload),
			"payloadType": "application/vnd.in-toto+json",
			"signatures":  []any{map[string]string{"sig": base64.StdEncoding.EncodeToString(sig), "keyid": ""}},
		},
	})
	return b
}

// SignKey signs payload with key, as model_signing's key method.
func SignKey(key *ecdsa.PrivateKey, payload []byte) ([]byte, error) {
	sig, err := signPAE(key, payload)
	if err != nil {
		return nil, err
	}
	hint, err := modelsig.KeyHint(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return bundleJSON(map[string]any{"publicKey": map[string]string{"hint": hint}, "tlogEntries": []any{}}, payload, sig), nil
}

// SignChain signs payload with key and puts chain (leaf first) in the bundle,
// as model_signing's certificate method.
func SignChain(key *ecdsa.PrivateKey, chain []*x509.Certificate, payload []byte) ([]byte, error) {
	sig, err := signPAE(key, payload)
	if err != nil {
		return nil, err
	}
	var certs []any
	for _, c := range chain {
		certs = append(certs, map[string]string{"rawBytes": base64.StdEncoding.EncodeToString(c.Raw)})
	}
	return bundleJSON(map[string]any{"x509CertificateChain": map[string]any{"certificates": certs}, "tlogEntries": []any{}}, payload, sig), nil
}

// CA is a throwaway root → intermediate → leaf chain.
type CA struct {
	Root, Intermediate, Leaf *x509.Certificate
	LeafKey                  *ecdsa.PrivateKey
}

// NewCA makes a throwaway certificate chain for signing.
func NewCA() (*CA, error) {
	mk := func(tmpl, parent *x509.Certificate, pub crypto.PublicKey, priv crypto.Signer) (*x509.Certificate, error) {
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
		if err != nil {
			return nil, err
		}
		return x509.ParseCertificate(der)
	}
	now := time.Now().Add(-time.Hour)
	rk, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ik, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	lk, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rt := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test root"}, NotBefore: now,
		NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	r, err := mk(rt, rt, &rk.PublicKey, rk)
	if err != nil {
		return nil, err
	}
	it := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "test intermediate"}, NotBefore: now,
		NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	i, err := mk(it, r, &ik.PublicKey, rk)
	if err != nil {
		return nil, err
	}
	lt := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "model signer"}, NotBefore: now,
		NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	l, err := mk(lt, i, &lk.PublicKey, ik)
	if err != nil {
		return nil, err
	}
	return &CA{Root: r, Intermediate: i, Leaf: l, LeafKey: lk}, nil
}

// WriteFile writes data to path, creating directories.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
