//go:build !mlwarden_sbatch

package cli

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig/imagesigtest"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig/modelsigtest"
)

// verifyRun runs `mlwarden verify ARGS` in-process: exit code and stdout.
func verifyRun(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut}
	c := newVerifyCmd(a)
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errOut)
	c.SilenceUsage, c.SilenceErrors = true, true
	if err := c.ExecuteContext(context.Background()); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code, out.String() + errOut.String() + err.Error()
		}
		return ExitError, out.String() + err.Error()
	}
	return a.code, out.String()
}

// TestMain lets the test binary act as `mlwarden verify` for benchmarks:
// MLWARDEN_VERIFY_MAIN=1 ./cli.test checksums DIR. (The command is also
// reachable as `mlwarden verify` once wired into root.go.)
func TestMain(m *testing.M) {
	if os.Getenv("MLWARDEN_VERIFY_MAIN") == "1" {
		a := &app{stdout: os.Stdout, stderr: os.Stderr}
		c := newVerifyCmd(a)
		c.SetArgs(os.Args[1:])
		c.SilenceUsage = true
		if err := c.Execute(); err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				os.Exit(ee.code)
			}
			os.Exit(ExitError)
		}
		os.Exit(a.code)
	}
	os.Exit(m.Run())
}

func verifyWrite(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for n, b := range files {
		if err := modelsigtest.WriteFile(filepath.Join(dir, n), []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestVerifyChecksums(t *testing.T) {
	dir := t.TempDir()
	verifyWrite(t, dir, map[string]string{"a.bin": "alpha", "sub/b.bin": "bravo"})
	cmd := exec.Command("sha256sum", "a.bin", "sub/b.bin")
	cmd.Dir = dir
	man, err := cmd.Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	verifyWrite(t, dir, map[string]string{"SHA256SUMS": string(man)})
	if code, out := verifyRun(t, "checksums", dir); code != 0 || !strings.Contains(out, "Verified OK") {
		t.Fatalf("exit %d: %s", code, out)
	}
	sum := sha256.Sum256([]byte("alpha"))
	if code, out := verifyRun(t, "checksums", filepath.Join(dir, "a.bin"), "--expect-digest", "sha256:"+string(hexs(sum[:]))); code != 0 {
		t.Errorf("--expect-digest: exit %d: %s", code, out)
	}
	if code, _ := verifyRun(t, "checksums", filepath.Join(dir, "a.bin"), "--expect-digest", "sha256:"+strings.Repeat("0", 64)); code != 1 {
		t.Errorf("wrong --expect-digest: exit %d", code)
	}
	verifyWrite(t, dir, map[string]string{"sub/b.bin": "bravO", "new.bin": "x"})
	code, out := verifyRun(t, "checksums", dir, "--format", "json", "--strict")
	var rep verifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != 1 || rep.Status != "failed" || len(rep.Problems) != 2 || rep.Problems[0].Path != "sub/b.bin" || rep.Problems[1].Status != "UNLISTED" {
		t.Errorf("exit %d, %+v", code, rep)
	}
	if code, _ := verifyRun(t, "checksums", t.TempDir()); code != 2 {
		t.Errorf("no manifest: exit %d, want 2", code)
	}
	if code, _ := verifyRun(t, "checksums", dir, "--format", "xml"); code != 2 {
		t.Errorf("bad format: exit %d, want 2", code)
	}
}

func hexs(b []byte) []byte {
	const h = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, h[c>>4], h[c&15])
	}
	return out
}

func verifyKeyFile(t *testing.T, k *ecdsa.PrivateKey) string {
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	p := filepath.Join(t.TempDir(), "key.pub")
	os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
	return p
}

func TestVerifyModel(t *testing.T) {
	dir := t.TempDir()
	verifyWrite(t, dir, map[string]string{"model.safetensors": strings.Repeat("w", 5000), "config.json": "{}"})
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	res, _ := modelsigtest.Manifest(dir, 0)
	sig, _ := modelsigtest.SignKey(k, modelsigtest.Statement("m", res, 0, nil))
	os.WriteFile(filepath.Join(dir, "model.sig"), sig, 0o644)
	key, bad := verifyKeyFile(t, k), verifyKeyFile(t, other)
	if code, out := verifyRun(t, "model", dir, "--key", key); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if code, out := verifyRun(t, "model", dir, "--public_key", bad); code != 1 {
		t.Errorf("wrong key: exit %d: %s", code, out)
	}
	if code, _ := verifyRun(t, "model", dir); code != 2 {
		t.Errorf("no trust: exit %d, want 2", code)
	}
	if code, _ := verifyRun(t, "model", dir, "--identity", "x@example.com"); code != 2 {
		t.Errorf("half a keyless policy: exit %d, want 2", code)
	}
	verifyWrite(t, dir, map[string]string{"extra.py": "print(1)"})
	code, out := verifyRun(t, "model", dir, "--key", key)
	if code != 1 || !strings.Contains(out, "extra.py: EXTRA") {
		t.Errorf("extra file: exit %d: %s", code, out)
	}
	if code, _ := verifyRun(t, "model", dir, "--key", key, "--ignore-paths", "extra.py"); code != 0 {
		t.Errorf("--ignore-paths: exit %d", code)
	}
}

func TestVerifyBlob(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "w.gguf")
	os.WriteFile(file, []byte("weights"), 0o644)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d := sha256.Sum256([]byte("weights"))
	s, _ := ecdsa.SignASN1(rand.Reader, k, d[:])
	os.WriteFile(file+".sig", []byte(base64.StdEncoding.EncodeToString(s)), 0o644)
	key := verifyKeyFile(t, k)
	if code, out := verifyRun(t, "blob", file, "--key", key); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	os.WriteFile(file, []byte("weightz"), 0o644)
	if code, _ := verifyRun(t, "blob", file, "--key", key); code != 1 {
		t.Errorf("tampered: exit %d", code)
	}
	if code, _ := verifyRun(t, "blob", file); code != 2 {
		t.Errorf("no trust: exit %d", code)
	}
}

func TestVerifyImage(t *testing.T) {
	reg := imagesigtest.Registry(t)
	k, other := imagesigtest.CosignKey(t), imagesigtest.OtherKey(t)
	tag := reg + "/mlwarden-test/cli:v1"
	d := imagesigtest.Push(t, tag)
	imagesigtest.SignLegacy(t, k, d)
	imagesigtest.Attest(t, k, d, d, "https://slsa.dev/provenance/v1")
	pem := func(p crypto.PublicKey) string {
		der, _ := x509.MarshalPKIXPublicKey(p)
		f := filepath.Join(t.TempDir(), "cosign.pub")
		os.WriteFile(f, pemEncode(der), 0o644)
		return f
	}
	key, bad := pem(k.Pub), pem(other.Pub)
	start := time.Now()
	code, out := verifyRun(t, "image", tag, "--key", key, "--format", "json")
	t.Logf("verify image against the loopback registry: %v", time.Since(start))
	var rep verifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Digest != d.DigestStr() {
		t.Fatalf("exit %d: %v %s", code, err, out)
	}
	if code, out := verifyRun(t, "image", tag, "--key", key, "--type", "slsaprovenance1"); code != 0 {
		t.Errorf("attestation: exit %d: %s", code, out)
	}
	if code, out := verifyRun(t, "image", tag, "--key", bad); code != 1 {
		t.Errorf("wrong key: exit %d: %s", code, out)
	}
	if code, _ := verifyRun(t, "image", tag, "--certificate-identity", "x@example.com"); code != 2 {
		t.Errorf("half a keyless policy: exit %d, want 2", code)
	}
	if code, _ := verifyRun(t, "image", reg+"/mlwarden-test/none:v1", "--key", key); code != 2 {
		t.Errorf("missing image: exit %d, want 2", code)
	}
}

func pemEncode(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// TestVerifyModelUpstream runs the command on signatures written by released
// model_signing versions (scanners/signatures/modelsig/testdata/upstream),
// with the flags upstream's own verify scripts pass.
func TestVerifyModelUpstream(t *testing.T) {
	up := filepath.Join("..", "..", "..", "scanners", "signatures", "modelsig", "testdata", "upstream")
	at := func(p string) string { return filepath.Join(up, p) }
	key, chain, root := at("keys/certificate/signing-key-pub.pem"), at("keys/certificate/int-ca-cert.pem"), at("trusted_root.json")
	keyless := func(id string) []string {
		return []string{"--identity", id, "--oidc-issuer", "https://sigstore.verify.ibm.com/oauth2", "--trusted-root", root}
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"key v1.1.0", []string{at("v1.1.0-elliptic-key"), "--key", key}, 0},
		{"key v1.0.0 single file", []string{at("v1.0.0-elliptic-key/signme-1"), "--signature", at("v1.0.0-elliptic-key/model.sig"), "--key", key}, 0},
		{"certificate v0.2.0", []string{at("v0.2.0-certificate"), "--certificate-chain", chain}, 0},
		{"sigstore v1.0.1", append([]string{at("v1.0.1-sigstore")}, keyless("stefanb@us.ibm.com")...), 0},
		{"sigstore, another identity", append([]string{at("v1.0.1-sigstore")}, keyless("someone@example.com")...), 1},
		{"ml-dsa is not checked", []string{at("v1.1.0-ml-dsa"), "--key", key}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := verifyRun(t, append([]string{"model"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", code, tt.code, out)
			}
		})
	}
}

// TestVerifyOutput pins what verify prints, text and JSON, for a verdict
// each way and for a check that could not be made.
func TestVerifyOutput(t *testing.T) {
	dir := t.TempDir()
	sum := func(s string) string { d := sha256.Sum256([]byte(s)); return string(hexs(d[:])) }
	verifyWrite(t, dir, map[string]string{"a.bin": "alpha", "b.bin": "bravO", "SHA256SUMS": sum("alpha") + "  a.bin\n" + sum("bravo") + "  b.bin\n"})
	empty := t.TempDir()
	file := filepath.Join(dir, "a.bin")
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d := sha256.Sum256([]byte("alpha"))
	s, _ := ecdsa.SignASN1(rand.Reader, k, d[:])
	verifyWrite(t, dir, map[string]string{"a.bin.sig": base64.StdEncoding.EncodeToString(s)})
	key := verifyKeyFile(t, k)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"checksums", dir}, 1, "b.bin: FAILED (sha256 is " + sum("bravO") + ", manifest says " + sum("bravo") + ")\nVerification FAILED: " + dir + ": 1 problems\n"},
		{[]string{"checksums", dir, "-f", "json"}, 1, `{
  "command": "checksums",
  "target": "` + dir + `",
  "status": "failed",
  "verified": false,
  "checked": 2,
  "problems": [
    {
      "path": "b.bin",
      "status": "FAILED",
      "reason": "sha256 is ` + sum("bravO") + `, manifest says ` + sum("bravo") + `"
    }
  ]
}
`},
		{[]string{"checksums", file, "--expect-digest", "sha256:" + sum("alpha")}, 0, "Verified OK: " + file + ", 1 files checked\n"},
		{[]string{"blob", file, "--key", key}, 0, "Verified OK: " + file + " (signed by key)\n"},
		{[]string{"blob", file, "--key", key, "-f", "json"}, 0, `{
  "command": "blob",
  "target": "` + file + `",
  "status": "verified",
  "verified": true,
  "signer": "key",
  "digest": "sha256:` + sum("alpha") + `"
}
`},
		{[]string{"blob", filepath.Join(dir, "b.bin"), "--key", key}, 1, "Verification FAILED: " + filepath.Join(dir, "b.bin") + ": no signature: no " +
			filepath.Join(dir, "b.bin") + ".sigstore.json or " + filepath.Join(dir, "b.bin") + ".sig; give --bundle or --signature\n"},
		{[]string{"checksums", empty, "-f", "json"}, 2, `{
  "command": "checksums",
  "target": "` + empty + `",
  "status": "error",
  "verified": false,
  "error": "no checksum manifest found in ` + empty + ` (looked for SHA256SUMS, SHA512SUMS, *.sha256, *.sha512); give --manifest or --expect-digest"
}
verify checksums ` + empty + `: could not check: no checksum manifest found in ` + empty + ` (looked for SHA256SUMS, SHA512SUMS, *.sha256, *.sha512); give --manifest or --expect-digest`},
		{[]string{"blob", file}, 2, "give --key, or --certificate-identity and --certificate-oidc-issuer with --trusted-root"},
	} {
		code, out := verifyRun(t, tt.args...)
		if code != tt.code || out != tt.want {
			t.Errorf("%q: exit %d, want %d\ngot:\n%s\nwant:\n%s", tt.args, code, tt.code, out, tt.want)
		}
	}
}
