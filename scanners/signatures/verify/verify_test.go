package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig/imagesigtest"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig/modelsigtest"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
	"github.com/mlwarden/mlwarden/scanners/signatures/verify"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for n, b := range files {
		if err := modelsigtest.WriteFile(filepath.Join(dir, n), []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
}

func sum(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// problems lists a report's problems as "PATH STATUS".
func problems(r *verify.Report) []string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, p.Path+" "+p.Status)
	}
	return out
}

func pubFile(t *testing.T, k crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "key.pub")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReportJSON pins the JSON form `mlwarden verify --format json` prints.
func TestReportJSON(t *testing.T) {
	r := verify.Report{Command: "model", Target: "m", Status: verify.StatusFailed, Signer: "key ab", Method: "key",
		Digest: "sha256:00", Format: "legacy", Checked: 2, Problems: []verify.Problem{{Path: "a", Status: "EXTRA", Reason: "r"}, {Path: "b", Status: "REJECTED"}}, Error: "e"}
	got, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"command":"model","target":"m","status":"failed","verified":false,"signer":"key ab","method":"key","digest":"sha256:00","format":"legacy","checked":2,"problems":[{"path":"a","status":"EXTRA","reason":"r"},{"path":"b","status":"REJECTED"}],"error":"e"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got, _ = json.Marshal(verify.Report{Command: "blob", Target: "f", Status: verify.StatusVerified, Verified: true})
	if want := `{"command":"blob","target":"f","status":"verified","verified":true}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestChecksums(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret": "s"})
	dir := t.TempDir()
	lfs := "version https://git-lfs.github.com/spec/v1\noid sha256:" + strings.Repeat("4d", 32) + "\nsize 123456789\n"
	write(t, dir, map[string]string{
		"a.bin": "alpha", "sub/b.bin": "bravO", "l.bin": lfs, "new.bin": "new", ".git/HEAD": "ref",
		"SHA256SUMS": sum("alpha") + "  a.bin\n" + sum("bravo") + "  sub/b.bin\n" + sum("weights") + "  l.bin\n" +
			"not a line\n" + sum("s") + "  ../secret\n" + sum("s") + "  out\n" + sum("x") + "  gone\n",
	})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Checksums(ctx, dir, verify.ChecksumsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sub/b.bin FAILED", "l.bin FAILED", "../secret REJECTED", "out REJECTED", "gone MISSING"}
	if rep.Status != verify.StatusFailed || rep.Checked != 6 || !slices.Equal(problems(rep), want) {
		t.Errorf("%+v\ngot  %q\nwant %q", rep, problems(rep), want)
	}
	if r := rep.Problems[1].Reason; !strings.Contains(r, "git-LFS pointer") {
		t.Errorf("LFS pointer reason %q", r)
	}
	rep, _ = verify.Checksums(ctx, dir, verify.ChecksumsOptions{Strict: true})
	want = []string{"SHA256SUMS MALFORMED", "sub/b.bin FAILED", "l.bin FAILED", "../secret REJECTED", "out REJECTED", "gone MISSING", "new.bin UNLISTED"}
	if !slices.Equal(problems(rep), want) {
		t.Errorf("strict: got %q, want %q", problems(rep), want)
	}

	// A file: its sidecar FILE.sha256, or an expected digest.
	side := t.TempDir()
	write(t, side, map[string]string{"w.bin": "w", "w.bin.sha256": sum("w") + "\n"})
	if rep, err := verify.Checksums(ctx, filepath.Join(side, "w.bin"), verify.ChecksumsOptions{}); err != nil || !rep.Verified {
		t.Errorf("sidecar: %v %+v", err, rep)
	}
	rep, err = verify.Checksums(ctx, filepath.Join(dir, "a.bin"), verify.ChecksumsOptions{ExpectDigest: "sha256:" + sum("alpha")})
	if err != nil || !rep.Verified || rep.Digest != "sha256:"+sum("alpha") {
		t.Errorf("expect digest: %v %+v", err, rep)
	}
	// Given manifests name files relative to the target.
	m := filepath.Join(t.TempDir(), "M")
	write(t, filepath.Dir(m), map[string]string{"M": sum("alpha") + "  a.bin\n"})
	if rep, err := verify.Checksums(ctx, dir, verify.ChecksumsOptions{Manifests: []string{m}}); err != nil || !rep.Verified || rep.Checked != 1 {
		t.Errorf("--manifest: %v %+v", err, rep)
	}

	// Could not check: a report with status error, and the error.
	for name, tt := range map[string]struct {
		target string
		o      verify.ChecksumsOptions
		msg    string
	}{
		"no manifest":     {t.TempDir(), verify.ChecksumsOptions{}, "no checksum manifest found in "},
		"digest of a dir": {dir, verify.ChecksumsOptions{ExpectDigest: "sha256:" + sum("x")}, "--expect-digest needs a FILE, not a directory"},
		"bad digest":      {filepath.Join(dir, "a.bin"), verify.ChecksumsOptions{ExpectDigest: "md5:00"}, "--expect-digest: digest "},
		"missing":         {filepath.Join(dir, "nope"), verify.ChecksumsOptions{}, "stat "},
	} {
		rep, err := verify.Checksums(ctx, tt.target, tt.o)
		if err == nil || rep == nil || rep.Status != verify.StatusError || rep.Error != err.Error() || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("%s: %v %+v", name, err, rep)
		}
	}
}

func TestTrustFiles(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ek, _, _ := ed25519.GenerateKey(rand.Reader)
	key, edKey := pubFile(t, &k.PublicKey), pubFile(t, ek)
	chain := filepath.Join("..", "modelsig", "testdata", "upstream", "keys", "certificate", "int-ca-cert.pem")
	root := filepath.Join("..", "modelsig", "testdata", "upstream", "trusted_root.json")
	id := trust.Identity{Subject: "ci@example.com", Issuer: "https://issuer.example"}
	for _, tt := range []struct {
		name          string
		f             verify.TrustFiles
		model, cosign string // "" when it loads, else the start of the error
	}{
		{"key", verify.TrustFiles{Key: key}, "", ""},
		{"ed25519 key", verify.TrustFiles{Key: edKey}, "--key: model signatures use elliptic-curve keys", ""},
		{"chain", verify.TrustFiles{CertificateChain: []string{chain}}, "", "--certificate-chain is for model signatures"},
		{"keyless", verify.TrustFiles{TrustedRoot: root, Identity: id}, "", ""},
		{"nothing", verify.TrustFiles{}, "give exactly one of", "give --key, or"},
		{"two", verify.TrustFiles{Key: key, TrustedRoot: root, Identity: id}, "give exactly one of", "give --key, or"},
		{"key with a trusted root: a keyed bundle's timestamps", verify.TrustFiles{Key: key, TrustedRoot: root}, "keyless verification: identity needs", ""},
		{"identity without root", verify.TrustFiles{Identity: id}, "keyless verification needs --trusted-root", "keyless verification needs --trusted-root"},
		{"root without identity", verify.TrustFiles{TrustedRoot: root}, "keyless verification: identity needs a subject", "keyless verification: identity needs a subject"},
		{"missing key", verify.TrustFiles{Key: key + ".gone"}, "read key: ", "read key: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for kind, want := range map[string]string{"model": tt.model, "cosign": tt.cosign} {
				var err error
				if kind == "model" {
					_, err = tt.f.ModelTrust()
				} else {
					_, err = tt.f.CosignTrust()
				}
				if (want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), want)) {
					t.Errorf("%s trust: %v, want %q", kind, err, want)
				}
			}
		})
	}
}

func TestModel(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write(t, dir, map[string]string{"model.safetensors": strings.Repeat("w", 5000), "config.json": "{}"})
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	res, _ := modelsigtest.Manifest(dir, 0)
	sig, _ := modelsigtest.SignKey(k, modelsigtest.Statement("m", res, 0, nil))
	write(t, dir, map[string]string{"model.sig": string(sig)})
	key := verify.TrustFiles{Key: pubFile(t, &k.PublicKey)}
	rep, err := verify.Model(ctx, dir, verify.ModelOptions{Trust: key})
	if err != nil || !rep.Verified || rep.Method != "key" || !strings.HasPrefix(rep.Signer, "key ") || rep.Checked != 2 {
		t.Fatalf("%v %+v", err, rep)
	}
	rep, err = verify.Model(ctx, dir, verify.ModelOptions{Trust: verify.TrustFiles{Key: pubFile(t, &other.PublicKey)}})
	if err != nil || rep.Status != verify.StatusFailed || !strings.HasPrefix(rep.Error, "signer not trusted") {
		t.Errorf("wrong key: %v %+v", err, rep)
	}
	write(t, dir, map[string]string{"extra.py": "print(1)", "config.json": "{ }"})
	rep, err = verify.Model(ctx, dir, verify.ModelOptions{Trust: key})
	if want := []string{"config.json FAILED", "extra.py EXTRA"}; err != nil || rep.Status != verify.StatusFailed || !slices.Equal(problems(rep), want) {
		t.Errorf("tampered: %v %q", err, problems(rep))
	}
	write(t, dir, map[string]string{"config.json": "{}"})
	if rep, _ := verify.Model(ctx, dir, verify.ModelOptions{Trust: key, IgnorePaths: []string{"extra.py"}}); !rep.Verified {
		t.Errorf("ignore paths: %+v", rep)
	}
	if rep, _ := verify.Model(ctx, dir, verify.ModelOptions{Trust: key, IgnoreUnsignedFiles: true}); !rep.Verified {
		t.Errorf("ignore unsigned files: %+v", rep)
	}
	// A signature elsewhere; none at all.
	elsewhere := filepath.Join(t.TempDir(), "m.sig")
	os.Rename(filepath.Join(dir, "model.sig"), elsewhere)
	if rep, _ := verify.Model(ctx, dir, verify.ModelOptions{Trust: key, Signature: elsewhere, IgnorePaths: []string{"extra.py"}}); !rep.Verified {
		t.Errorf("--signature: %+v", rep)
	}
	rep, err = verify.Model(ctx, dir, verify.ModelOptions{Trust: key})
	if err != nil || rep.Status != verify.StatusFailed || !strings.Contains(rep.Error, "model.sig not found (give --signature)") {
		t.Errorf("unsigned: %v %+v", err, rep)
	}
	rep, err = verify.Model(ctx, filepath.Join(dir, "config.json"), verify.ModelOptions{Trust: key})
	if err == nil || rep.Status != verify.StatusError || rep.Error != "a single-file model needs --signature FILE" {
		t.Errorf("single file: %v %+v", err, rep)
	}
	if rep, err := verify.Model(ctx, dir, verify.ModelOptions{}); rep != nil || err == nil {
		t.Errorf("no trust: %v %+v, want no report", err, rep)
	}
}

func TestBlob(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "w.gguf")
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d := sha256.Sum256([]byte("weights"))
	s, _ := ecdsa.SignASN1(rand.Reader, k, d[:])
	write(t, dir, map[string]string{"w.gguf": "weights", "w.gguf.sig": base64.StdEncoding.EncodeToString(s), "n.gguf": "n"})
	key := verify.TrustFiles{Key: pubFile(t, &k.PublicKey)}
	rep, err := verify.Blob(ctx, file, verify.BlobOptions{Trust: key})
	if err != nil || !rep.Verified || rep.Signer != "key" || rep.Digest != "sha256:"+hex.EncodeToString(d[:]) {
		t.Fatalf("%v %+v", err, rep)
	}
	write(t, dir, map[string]string{"w.gguf": "weightz"})
	if rep, err := verify.Blob(ctx, file, verify.BlobOptions{Trust: key}); err != nil || rep.Status != verify.StatusFailed || !strings.HasPrefix(rep.Error, "invalid signature") {
		t.Errorf("tampered: %v %+v", err, rep)
	}
	rep, err = verify.Blob(ctx, filepath.Join(dir, "n.gguf"), verify.BlobOptions{Trust: key})
	if err != nil || rep.Status != verify.StatusFailed || !strings.HasPrefix(rep.Error, "no signature: ") {
		t.Errorf("unsigned: %v %+v", err, rep)
	}
	rep, err = verify.Blob(ctx, file, verify.BlobOptions{Trust: key, Bundle: filepath.Join(dir, "none.json")})
	if !errors.Is(err, os.ErrNotExist) || rep.Status != verify.StatusError {
		t.Errorf("missing bundle: %v %+v", err, rep)
	}
	if rep, err := verify.Blob(ctx, file, verify.BlobOptions{}); rep != nil || err == nil {
		t.Errorf("no trust: %v %+v, want no report", err, rep)
	}
}

func TestImage(t *testing.T) {
	reg := imagesigtest.Registry(t)
	k := imagesigtest.CosignKey(t)
	tag := reg + "/mlwarden-test/verify:v1"
	d := imagesigtest.Push(t, tag)
	imagesigtest.SignLegacy(t, k, d)
	unsigned := reg + "/mlwarden-test/verify-unsigned:v1"
	imagesigtest.Push(t, unsigned)
	key := verify.TrustFiles{Key: pubFile(t, k.Pub)}
	ctx := context.Background()
	rep, err := verify.Image(ctx, tag, verify.ImageOptions{Trust: key})
	if err != nil || !rep.Verified || rep.Digest != d.DigestStr() || rep.Checked != 1 {
		t.Fatalf("%v %+v", err, rep)
	}
	if rep, err := verify.Image(ctx, unsigned, verify.ImageOptions{Trust: key}); err != nil || rep.Status != verify.StatusFailed || !strings.HasPrefix(rep.Error, "no signature") {
		t.Errorf("unsigned: %v %+v", err, rep)
	}
	if rep, err := verify.Image(ctx, reg+"/mlwarden-test/none:v1", verify.ImageOptions{Trust: key}); err == nil || rep.Status != verify.StatusError {
		t.Errorf("missing image: %v %+v", err, rep)
	}
}
