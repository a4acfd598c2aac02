package modelsig_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig/modelsigtest"
)

func makeModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"config.json":        `{"a":1}`,
		"model.safetensors":  strings.Repeat("w", 2500),
		"sub/tokenizer.json": "{}",
		"empty":              "",
		".git/HEAD":          "ref: refs/heads/main\n",
		"notes/skip-me.txt":  "ignored by the signature",
		".gitattributes":     "*.safetensors filter=lfs\n",
	} {
		if err := modelsigtest.WriteFile(filepath.Join(dir, name), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type signer func(t *testing.T, payload []byte) ([]byte, modelsig.Trust, modelsig.Trust)

func keySigner(t *testing.T, payload []byte) ([]byte, modelsig.Trust, modelsig.Trust) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sig, err := modelsigtest.SignKey(k, payload)
	if err != nil {
		t.Fatal(err)
	}
	return sig, modelsig.Trust{Key: &k.PublicKey}, modelsig.Trust{Key: &other.PublicKey}
}

func chainSigner(t *testing.T, payload []byte) ([]byte, modelsig.Trust, modelsig.Trust) {
	c, err := modelsigtest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := modelsigtest.NewCA()
	sig, err := modelsigtest.SignChain(c.LeafKey, []*x509.Certificate{c.Leaf, c.Intermediate}, payload)
	if err != nil {
		t.Fatal(err)
	}
	return sig, modelsig.Trust{Chain: []*x509.Certificate{c.Root}}, modelsig.Trust{Chain: []*x509.Certificate{other.Root}}
}

func verify(t *testing.T, dir string, sig []byte, tr modelsig.Trust, o modelsig.Options) (*modelsig.Report, error) {
	t.Helper()
	return verifyModel(t, dir, ".", sig, tr, o)
}

// verifyModel verifies the model at model (a directory or a single file,
// relative to dir) with the hasher rooted at dir.
func verifyModel(t *testing.T, dir, model string, sig []byte, tr modelsig.Trust, o modelsig.Options) (*modelsig.Report, error) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	return modelsig.Verify(context.Background(), checksums.NewHasher(root.FS()), model, sig, tr, o)
}

func TestVerify(t *testing.T) {
	for _, method := range []struct {
		name string
		sign signer
	}{{"key", keySigner}, {"certificate", chainSigner}} {
		for _, shard := range []int64{0, 1000} {
			t.Run(method.name+"/shards="+string(rune('0'+shard/1000)), func(t *testing.T) {
				dir := makeModel(t)
				ign := []string{"notes", "model.sig", ".git", ".gitattributes", ".github", ".gitignore"}
				res, err := modelsigtest.Manifest(dir, shard, ign...)
				if err != nil {
					t.Fatal(err)
				}
				sig, good, bad := method.sign(t, modelsigtest.Statement(filepath.Base(dir), res, shard, []string{"notes"}))
				if err := os.WriteFile(filepath.Join(dir, "model.sig"), sig, 0o644); err != nil {
					t.Fatal(err)
				}
				rep, err := verify(t, dir, sig, good, modelsig.Options{})
				if err != nil || !rep.OK() {
					t.Fatalf("verify: %v %+v", err, rep)
				}
				if _, err := verify(t, dir, sig, bad, modelsig.Options{}); !errors.Is(err, modelsig.ErrIdentity) {
					t.Errorf("wrong trust: err %v, want ErrIdentity", err)
				}
				// Tampered signature bytes.
				tampered := []byte(strings.Replace(string(sig), `"payload":"`, `"payload":"e`, 1))
				if _, err := verify(t, dir, tampered, good, modelsig.Options{}); err == nil {
					t.Error("tampered payload verified")
				}
				// Modify, add, remove files.
				os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte(strings.Repeat("x", 2500)), 0o644)
				os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"a":2}`), 0o644) // one shard: the whole file
				os.WriteFile(filepath.Join(dir, "extra.bin"), []byte("new"), 0o644)
				os.Remove(filepath.Join(dir, "sub", "tokenizer.json"))
				rep, err = verify(t, dir, sig, good, modelsig.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(rep.Modified, []string{"config.json", "model.safetensors"}) || !slices.Equal(rep.Extra, []string{"extra.bin"}) ||
					!slices.Equal(rep.Missing, []string{"sub/tokenizer.json"}) {
					t.Errorf("report %+v", rep.Result)
				}
				rep, _ = verify(t, dir, sig, good, modelsig.Options{IgnoreUnsignedFiles: true})
				if len(rep.Extra) != 0 {
					t.Errorf("--ignore-unsigned-files still reports %v", rep.Extra)
				}
				rep, _ = verify(t, dir, sig, good, modelsig.Options{IgnorePaths: []string{"extra.bin"}})
				if len(rep.Extra) != 0 {
					t.Errorf("--ignore-paths still reports %v", rep.Extra)
				}
			})
		}
	}
}

func TestUnsafeNames(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, name := range []string{"../etc/passwd", "/etc/passwd", `a\b`, "a/../../b"} {
		res := []modelsigtest.Resource{{Name: name, Algorithm: "sha256", Digest: strings.Repeat("00", 32)}}
		sig, _ := modelsigtest.SignKey(k, modelsigtest.Statement("m", res, 0, nil))
		if _, err := verify(t, t.TempDir(), sig, modelsig.Trust{Key: &k.PublicKey}, modelsig.Options{}); !errors.Is(err, modelsig.ErrInvalid) {
			t.Errorf("%q: err %v, want ErrInvalid", name, err)
		}
	}
}

func TestSymlinks(t *testing.T) {
	dir := makeModel(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "w"), []byte("x"), 0o644)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ign := []string{"notes", ".git", ".gitattributes"}
	res, _ := modelsigtest.Manifest(dir, 0, ign...)
	sig, _ := modelsigtest.SignKey(k, modelsigtest.Statement("m", res, 0, ign))
	os.Symlink(filepath.Join(outside, "w"), filepath.Join(dir, "link"))
	rep, err := verify(t, dir, sig, modelsig.Trust{Key: &k.PublicKey}, modelsig.Options{})
	if err != nil || len(rep.Unsafe) != 1 {
		t.Fatalf("%v %+v", err, rep)
	}
}

func TestSigstoreKeyless(t *testing.T) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	dir := makeModel(t)
	ign := []string{"notes", ".git", ".gitattributes"}
	res, _ := modelsigtest.Manifest(dir, 0, ign...)
	payload := modelsigtest.Statement("m", res, 0, ign)
	ent, err := vs.Attest("builder@example.com", "https://issuer.example", payload)
	if err != nil {
		t.Fatal(err)
	}
	good := modelsig.Trust{TrustedMaterial: vs, Identity: "builder@example.com", OIDCIssuer: "https://issuer.example"}
	pt, p, err := modelsig.VerifySigstore(ent, good)
	if err != nil {
		t.Fatal(err)
	}
	st, err := modelsig.ParseStatement(pt, p)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	rep, err := modelsig.Compare(context.Background(), checksums.NewHasher(root.FS()), ".", modelsig.MethodSigstore, "x", st, modelsig.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("%v %+v", err, rep)
	}
	for name, tr := range map[string]modelsig.Trust{
		"wrong identity": {TrustedMaterial: vs, Identity: "mallory@example.com", OIDCIssuer: "https://issuer.example"},
		"wrong issuer":   {TrustedMaterial: vs, Identity: "builder@example.com", OIDCIssuer: "https://other.example"},
		"no identity":    {TrustedMaterial: vs},
	} {
		if _, _, err := modelsig.VerifySigstore(ent, tr); !errors.Is(err, modelsig.ErrIdentity) {
			t.Errorf("%s: err %v, want ErrIdentity", name, err)
		}
	}
	other, _ := ca.NewVirtualSigstore()
	if _, _, err := modelsig.VerifySigstore(ent, modelsig.Trust{TrustedMaterial: other, Identity: "builder@example.com", OIDCIssuer: "https://issuer.example"}); !errors.Is(err, modelsig.ErrInvalid) {
		t.Errorf("other root: err %v, want ErrInvalid", err)
	}
}

func TestPAECompat(t *testing.T) {
	got := modelsig.PyBytesRepr([]byte("a'b\n\x01\\"))
	if want := `b"a'b\n\x01\\"`; got != want {
		t.Errorf("repr = %s, want %s", got, want)
	}
}

func FuzzParse(f *testing.F) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sig, _ := modelsigtest.SignKey(k, modelsigtest.Statement("m", []modelsigtest.Resource{{Name: "a", Algorithm: "sha256", Digest: "00"}}, 0, nil))
	f.Add(sig)
	f.Add([]byte(`{"dsseEnvelope":{"signatures":[{}]},"verificationMaterial":{"x509CertificateChain":{"certificates":[{"rawBytes":"AA=="}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := modelsig.ParseSignature(data)
		if err != nil {
			return
		}
		_, _ = modelsig.ParseStatement(s.PayloadType, s.Payload)
		_ = s.VerifyKey(&k.PublicKey)
	})
}

// TestV02Compat: a model_signing v0.2 signature: Digests/v0.1 predicate (one
// subject per file), signed over the buggy "DSSEV1 … b'…'" encoding, key
// bundle with rawBytes and no hint.
func TestV02Compat(t *testing.T) {
	dir := makeModel(t)
	res, _ := modelsigtest.Manifest(dir, 0, "notes", ".git", ".gitattributes")
	var subjects []map[string]any
	for _, r := range res {
		subjects = append(subjects, map[string]any{"name": r.Name, "digest": map[string]string{"sha256": r.Digest}})
	}
	payload, _ := json.Marshal(map[string]any{"_type": "https://in-toto.io/Statement/v1", "subject": subjects,
		"predicateType": "https://model_signing/Digests/v0.1", "predicate": map[string]any{}})
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sum := sha256.Sum256(modelsig.PAECompat("application/vnd.in-toto+json", payload))
	sig, _ := ecdsa.SignASN1(rand.Reader, k, sum[:])
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	bundle, _ := json.Marshal(map[string]any{
		"mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.3",
		"verificationMaterial": map[string]any{"publicKey": map[string]any{"rawBytes": base64.StdEncoding.EncodeToString(der),
			"keyDetails": "PKIX_ECDSA_P256_SHA_256"}},
		"dsseEnvelope": map[string]any{"payload": base64.StdEncoding.EncodeToString(payload), "payloadType": "application/vnd.in-toto+json",
			"signatures": []any{map[string]string{"sig": base64.StdEncoding.EncodeToString(sig)}}},
	})
	rep, err := verify(t, dir, bundle, modelsig.Trust{Key: &k.PublicKey}, modelsig.Options{IgnorePaths: []string{"notes"}})
	if err != nil || !rep.OK() {
		t.Fatalf("v0.2 signature: %v %+v", err, rep)
	}
}

// streamFS hides io.ReaderAt from the files of an FS, as a file system
// that can only stream would.
type streamFS struct{ fs.FS }

func (s streamFS) Open(name string) (fs.File, error) {
	f, err := s.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && !fi.IsDir() {
		return struct{ fs.File }{f}, nil
	}
	return f, nil
}

// TestVerifyThroughFS compares a sharded model read through file systems
// other than an os.Root: os.DirFS (whose files are io.ReaderAt) and one that
// can only stream. Both see the same model, and the symlink out of it is
// refused by the hasher even where the FS would follow it.
func TestVerifyThroughFS(t *testing.T) {
	dir := makeModel(t)
	ign := []string{"notes", "model.sig", ".git", ".gitattributes", ".github", ".gitignore"}
	res, err := modelsigtest.Manifest(dir, 1000, ign...)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sig, err := modelsigtest.SignKey(k, modelsigtest.Statement("m", res, 1000, []string{"notes"}))
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "w"), []byte("x"), 0o644)
	tr := modelsig.Trust{Key: &k.PublicKey}
	for name, fsys := range map[string]fs.FS{"DirFS": os.DirFS(dir), "stream": streamFS{os.DirFS(dir)}} {
		t.Run(name, func(t *testing.T) {
			rep, err := modelsig.Verify(context.Background(), checksums.NewHasher(fsys), ".", sig, tr, modelsig.Options{})
			if err != nil || !rep.OK() || rep.Files != 3 {
				t.Fatalf("%v %+v", err, rep.Result)
			}
		})
	}
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte(strings.Repeat("w", 1500)+strings.Repeat("x", 1000)), 0o644)
	os.Symlink(filepath.Join(outside, "w"), filepath.Join(dir, "link"))
	rep, err := modelsig.Verify(context.Background(), checksums.NewHasher(streamFS{os.DirFS(dir)}), ".", sig, tr, modelsig.Options{})
	if err != nil || !slices.Equal(rep.Modified, []string{"model.safetensors"}) || len(rep.Unsafe) != 1 {
		t.Fatalf("%v %+v", err, rep.Result)
	}
}
