package signatures

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig/modelsigtest"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for n, b := range files {
		if err := modelsigtest.WriteFile(filepath.Join(dir, n), []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, s *Scanner, dir string, others ...scanners.Scanner) []string {
	t.Helper()
	var got []string
	for _, f := range scannertest.ScanDir(t, dir, append([]scanners.Scanner{s}, others...)...) {
		got = append(got, f.RuleID+" "+f.Severity.String()+" "+f.Path)
		if f.Message == "" || len(f.Message) < 40 {
			t.Errorf("terse message %q", f.Message)
		}
	}
	sort.Strings(got)
	return got
}

func TestChecksumManifests(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	write(t, dir, map[string]string{"w/a.bin": "alpha", "w/b.bin": "bravo", "w/c.bin": "charlie", "w/d.gguf": "delta"})
	write(t, outside, map[string]string{"secret": "s"})
	cmd := exec.Command("sha256sum", "a.bin", "b.bin", "c.bin", "d.gguf")
	cmd.Dir = filepath.Join(dir, "w")
	man, err := cmd.Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	man = append(man, []byte(strings.Repeat("0", 64)+"  ../outside\n"+strings.Repeat("0", 64)+"  link\nnot a line\n")...)
	write(t, dir, map[string]string{"w/SHA256SUMS": string(man), "w/b.bin": "bravO"})
	os.Remove(filepath.Join(dir, "w", "c.bin"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "w", "link"))
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := run(t, s, dir)
	want := []string{
		"signatures/checksum-mismatch critical w/SHA256SUMS",
		"signatures/file-missing medium w/SHA256SUMS",
		"signatures/manifest-malformed low w/SHA256SUMS",
		"signatures/unsafe-path high w/SHA256SUMS",
		"signatures/unsafe-path high w/SHA256SUMS",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLFSPointerAndUnsigned(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"m/model.safetensors": "version https://git-lfs.github.com/spec/v1\noid sha256:" + strings.Repeat("4d", 32) + "\nsize 123456789\n",
		"m/config.json":       "{}",
		"n/weights.bin":       strings.Repeat("x", 2000),
	})
	s, _ := New()
	got := run(t, s, dir)
	want := []string{"signatures/lfs-pointer-only medium m/model.safetensors", "signatures/unsigned info m", "signatures/unsigned info n"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func writeKey(t *testing.T, dir string, k *ecdsa.PrivateKey) string {
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	p := filepath.Join(dir, "key.pub")
	os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
	return p
}

func TestModelSignaturePolicy(t *testing.T) {
	keys := t.TempDir()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good, bad := writeKey(t, keys, k), writeKey(t, t.TempDir(), other)

	setup := func(t *testing.T) string {
		dir := t.TempDir()
		write(t, dir, map[string]string{"models/llm/model.safetensors": strings.Repeat("w", 3000), "models/llm/config.json": "{}",
			"models/plain/weights.bin": "x"})
		md := filepath.Join(dir, "models", "llm")
		res, _ := modelsigtest.Manifest(md, 0, "model.sig")
		sig, err := modelsigtest.SignKey(k, modelsigtest.Statement("llm", res, 0, nil))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(md, "model.sig"), sig, 0o644)
		return dir
	}
	pol := func(key string) Policy {
		return Policy{Models: []ModelPolicy{{Path: "models/*", Authorities: []Authority{{Key: key}}}}}
	}
	tests := []struct {
		name   string
		policy Policy
		tamper func(dir string)
		want   []string
	}{
		{"verified", pol(good), nil, []string{"signatures/unsigned high models/plain"}},
		{"no policy", Policy{}, nil, []string{"signatures/unsigned info models/plain", "signatures/unverified info models/llm/model.sig"}},
		{"wrong key", pol(bad), nil, []string{"signatures/identity-mismatch critical models/llm/model.sig", "signatures/unsigned high models/plain"}},
		{"tampered", pol(good), func(dir string) {
			write(t, dir, map[string]string{"models/llm/model.safetensors": strings.Repeat("W", 3000), "models/llm/evil.pkl": "x"})
			os.Remove(filepath.Join(dir, "models/llm/config.json"))
		}, []string{"signatures/checksum-mismatch critical models/llm/model.safetensors", "signatures/file-missing medium models/llm/config.json",
			"signatures/file-not-signed high models/llm/evil.pkl", "signatures/unsigned high models/plain"}},
		{"warn mode", Policy{Models: []ModelPolicy{{Path: "models/*", Mode: "warn", Authorities: []Authority{{Key: good}}}}}, nil,
			[]string{"signatures/unsigned info models/plain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := setup(t)
			if tt.tamper != nil {
				tt.tamper(dir)
			}
			s, err := New(WithPolicy(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := run(t, s, dir); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestPolicyRejectsTrustAnyone(t *testing.T) {
	for name, p := range map[string]Policy{
		"no authorities":   {Images: []ImagePolicy{{Glob: "**"}}},
		"empty identities": {TrustedRoot: "x.json", Images: []ImagePolicy{{Glob: "**", Authorities: []Authority{{Keyless: &Keyless{}}}}}},
		"empty subject": {TrustedRoot: "x.json", Models: []ModelPolicy{{Path: "**", Authorities: []Authority{{Keyless: &Keyless{
			Identities: []trust.Identity{{Issuer: "https://issuer"}}}}}}}},
		"bad mode": {Models: []ModelPolicy{{Path: "**", Mode: "audit", Authorities: []Authority{{Key: "k.pub"}}}}},
	} {
		if _, err := New(WithPolicy(p)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestImagePolicy(t *testing.T) {
	keys := t.TempDir()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	key := writeKey(t, keys, k)
	p := Policy{Images: []ImagePolicy{{Glob: "registry.internal/ml/**", Authorities: []Authority{{Key: key}}}}}
	tests := []struct {
		ref     string
		verr    error
		want    string
		wantErr bool
	}{
		{"registry.internal/ml/train:v1", nil, "", false},
		{"registry.internal/ml/train:v1", trust.ErrUnsigned, "signatures/unsigned high", false},
		{"registry.internal/ml/train:v1", trust.ErrInvalid, "signatures/invalid critical", false},
		{"registry.internal/ml/train:v1", trust.ErrIdentity, "signatures/identity-mismatch critical", false},
		{"registry.internal/ml/train:v1", io.ErrUnexpectedEOF, "", true},
		{"registry.internal/other/x:v1", trust.ErrInvalid, "", false},
	}
	for _, tt := range tests {
		s, err := New(WithPolicy(p))
		if err != nil {
			t.Fatal(err)
		}
		s.verify = func(context.Context, string, imagesig.Options) (*imagesig.Result, error) {
			return &imagesig.Result{}, tt.verr
		}
		a := &scanners.Artifact{Kind: scanners.ArtifactImageConfig, Target: tt.ref, TargetKind: scanners.KindImage, Path: "/.image/config.json"}
		fs, err := scanners.ScanBytes(context.Background(), s, a, []byte("{}"))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s %v: err %v", tt.ref, tt.verr, err)
		}
		got := ""
		if len(fs) > 0 {
			got = fs[0].RuleID + " " + fs[0].Severity.String()
		}
		if got != tt.want {
			t.Errorf("%s %v: got %q, want %q", tt.ref, tt.verr, got, tt.want)
		}
	}
}

// TestImagePolicyPulledDigest: the signature is checked for the digest the
// image source pulled, not for the tag as given.
func TestImagePolicyPulledDigest(t *testing.T) {
	keys := t.TempDir()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p := Policy{Images: []ImagePolicy{{Glob: "registry.internal/ml/**", Authorities: []Authority{{Key: writeKey(t, keys, k)}}}}}
	s, err := New(WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	var asked string
	s.verify = func(_ context.Context, ref string, _ imagesig.Options) (*imagesig.Result, error) {
		asked = ref
		return &imagesig.Result{}, nil
	}
	d := "sha256:" + strings.Repeat("b", 64)
	a := &scanners.Artifact{Kind: scanners.ArtifactImageConfig, Target: "registry.internal/ml/train:v1", TargetKind: scanners.KindImage, Path: "/.image-config.json", Digest: d}
	if _, err := scanners.ScanBytes(context.Background(), s, a, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if want := "registry.internal/ml/train@" + d; asked != want {
		t.Errorf("verified %q, want %q", asked, want)
	}
}

func TestVerifyImage(t *testing.T) {
	keys := t.TempDir()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p := Policy{Images: []ImagePolicy{{Glob: "registry.internal/ml/**", Authorities: []Authority{{Key: writeKey(t, keys, k)}}}}}
	for _, tt := range []struct {
		ref  string
		verr error
		ok   bool
	}{
		{"registry.internal/ml/train@sha256:" + strings.Repeat("a", 64), nil, true},
		{"registry.internal/ml/train@sha256:" + strings.Repeat("a", 64), trust.ErrUnsigned, false},
		{"registry.internal/ml/train@sha256:" + strings.Repeat("a", 64), trust.ErrIdentity, false},
		{"registry.internal/ml/train@sha256:" + strings.Repeat("a", 64), io.ErrUnexpectedEOF, false},
		{"registry.internal/other/x@sha256:" + strings.Repeat("a", 64), trust.ErrInvalid, true},
	} {
		s, err := New(WithPolicy(p))
		if err != nil {
			t.Fatal(err)
		}
		s.verify = func(context.Context, string, imagesig.Options) (*imagesig.Result, error) {
			return &imagesig.Result{}, tt.verr
		}
		// Asked twice: an admission webhook asks for every Pod, so an answer
		// must not be remembered as "already checked".
		for range 2 {
			if err := s.VerifyImage(context.Background(), tt.ref); (err == nil) != tt.ok {
				t.Errorf("%s %v: VerifyImage = %v, want ok=%v", tt.ref, tt.verr, err, tt.ok)
			}
		}
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		glob, s string
		ok      bool
	}{
		{"models/*", "models/llm", true}, {"models/*", "models/a/b", false}, {"**", "a/b/c", true},
		{"registry.internal/ml/**", "registry.internal/ml/x/y:v1", true}, {"registry.internal/ml/*", "registry.internal/mlx/y", false},
	} {
		re, err := globRegexp(tt.glob)
		if err != nil || re.MatchString(tt.s) != tt.ok {
			t.Errorf("%s ~ %s: %v", tt.glob, tt.s, !tt.ok)
		}
	}
}

func TestBlobBundlePolicy(t *testing.T) {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pemKey, _ := kp.GetPublicKeyPem()
	keyFile := filepath.Join(t.TempDir(), "cosign.pub")
	os.WriteFile(keyFile, []byte(pemKey), 0o644)
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		write(t, dir, map[string]string{"m/w.gguf": "weights"})
		pb, err := sign.Bundle(&sign.PlainData{Data: []byte("weights")}, kp, sign.BundleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		js, _ := protojson.Marshal(pb)
		write(t, dir, map[string]string{"m/w.gguf.sigstore.json": string(js)})
		return dir
	}
	pol := Policy{Models: []ModelPolicy{{Path: "m", Authorities: []Authority{{Key: keyFile}}}}}
	s, _ := New(WithPolicy(pol))
	if got := run(t, s, setup(t)); len(got) != 0 {
		t.Errorf("signed blob: %q", got)
	}
	dir := setup(t)
	write(t, dir, map[string]string{"m/w.gguf": "weightz"})
	s, _ = New(WithPolicy(pol))
	if got := run(t, s, dir); !slices.Equal(got, []string{"signatures/invalid critical m/w.gguf.sigstore.json"}) {
		t.Errorf("tampered blob: %q", got)
	}
	s, _ = New()
	if got := run(t, s, setup(t)); !slices.Equal(got, []string{"signatures/unverified info m/w.gguf.sigstore.json"}) {
		t.Errorf("no policy: %q", got)
	}
}

// TestDetachedSignaturePolicy covers FILE.sig as cosign sign-blob
// --output-signature writes it: base64 of a signature over FILE made with
// sigstore's signer.
func TestDetachedSignaturePolicy(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good, bad := writeKey(t, t.TempDir(), k), writeKey(t, t.TempDir(), other)
	signer, err := signature.LoadECDSASignerVerifier(k, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signer.SignMessage(strings.NewReader("weights"))
	if err != nil {
		t.Fatal(err)
	}
	sig := base64.StdEncoding.EncodeToString(raw)
	pol := func(key string) Policy {
		return Policy{Models: []ModelPolicy{{Path: "m", Authorities: []Authority{{Key: key}}}}}
	}
	vectors := filepath.Join("modelsig", "testdata", "upstream")
	upstreamRoot, _ := filepath.Abs(filepath.Join(vectors, "trusted_root.json"))
	cert, err := os.ReadFile(filepath.Join(vectors, "keys", "certificate", "signing-key-cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	upstreamCert := string(cert)
	tests := []struct {
		name   string
		policy Policy
		files  map[string]string
		want   []string
	}{
		{"verified", pol(good), nil, nil},
		{"tampered", pol(good), map[string]string{"m/w.gguf": "weightz"}, []string{"signatures/invalid critical m/w.gguf.sig"}},
		{"wrong key", pol(bad), nil, []string{"signatures/invalid critical m/w.gguf.sig"}},
		{"no policy", Policy{}, nil, []string{"signatures/unverified info m/w.gguf.sig"}},
		{"file missing", pol(good), map[string]string{"m/w.gguf": ""}, []string{"signatures/file-missing medium m/w.gguf"}},
		{"gpg signature", pol(good), map[string]string{"m/w.gguf.sig": "\x89\x01\x33\x04\x00\x01\x08\x00"}, nil},
		// Keyless .sig + .pem carry no signed time: not verifiable offline,
		// so not a pass where the policy requires a signer.
		{"keyless without bundle", Policy{Models: []ModelPolicy{{Path: "m", Authorities: []Authority{{Keyless: &Keyless{
			TrustedRoot: upstreamRoot, Identities: []trust.Identity{{Subject: "ml@example.org", Issuer: "https://issuer.example.org"}}}}}}}},
			map[string]string{"m/w.gguf.pem": upstreamCert}, []string{"signatures/unverified high m/w.gguf.sig"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"m/w.gguf": "weights", "m/w.gguf.sig": sig + "\n"})
			write(t, dir, tt.files)
			if tt.name == "file missing" {
				os.Remove(filepath.Join(dir, "m", "w.gguf"))
			}
			s, err := New(WithPolicy(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := run(t, s, dir); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// textReader stands for the checks that read text files whole (secrets,
// pins): it makes the dispatcher hold them in memory.
type textReader struct{}

func (textReader) Check() string          { return "reader" }
func (textReader) Rules() []scanners.Rule { return nil }
func (textReader) Wants(a *scanners.Artifact, head []byte) bool {
	return !scanners.IsBinary(head)
}
func (textReader) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	_, err := io.Copy(io.Discard, c)
	return nil, err
}

// TestReadOnce checks that a file both scanned by other checks and named by
// manifests is read once: small files other checks read are hashed from the
// dispatcher's copy, a large file named by SHA256SUMS, its sidecar and
// model.sig is streamed by the check exactly once, a small binary nobody
// else reads is read by the check alone (the dispatcher does not read it for
// the check's sake), and a tampered small file is still caught (the digest
// taken from the dispatcher's copy is the real one).
func TestReadOnce(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyFile := writeKey(t, t.TempDir(), k)
	big := strings.Repeat("weights!", (scanners.SmallFile+4096)/8) // over SmallFile: read in place
	icon := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"                  // binary: no other check reads it
	files := map[string]string{"config.json": `{"layers": 2}`, "tokenizer.json": strings.Repeat("tok ", 5000),
		"model.safetensors": big, "icon.png": icon}
	for _, tt := range []struct {
		name   string
		tamper map[string]string
		want   []string
	}{
		{"intact", nil, nil},
		{"small file changed", map[string]string{"config.json": `{"layers": 3}`}, []string{
			"signatures/checksum-mismatch critical model/SHA256SUMS",
			"signatures/checksum-mismatch critical model/config.json",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			md := filepath.Join(dir, "model")
			write(t, md, files)
			cmd := exec.Command("sha256sum", "config.json", "tokenizer.json", "model.safetensors", "icon.png")
			cmd.Dir = md
			man, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			side := exec.Command("sha256sum", "model.safetensors")
			side.Dir = md
			sideMan, err := side.Output()
			if err != nil {
				t.Fatal(err)
			}
			write(t, md, map[string]string{"SHA256SUMS": string(man), "model.safetensors.sha256": string(sideMan)})
			res, _ := modelsigtest.Manifest(md, 0)
			sig, err := modelsigtest.SignKey(k, modelsigtest.Statement("model", res, 0, nil))
			if err != nil {
				t.Fatal(err)
			}
			write(t, md, map[string]string{"model.sig": string(sig)})
			write(t, md, tt.tamper)
			s, err := New(WithPolicy(Policy{Models: []ModelPolicy{{Path: "model", Authorities: []Authority{{Key: keyFile}}}}}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := run(t, s, dir, textReader{}); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if len(s.hashers) != 1 {
				t.Fatalf("%d hashers, want one for the target", len(s.hashers))
			}
			var h *checksums.Hasher
			for _, x := range s.hashers {
				h = x
			}
			if n, want := h.BytesRead(), int64(len(big)+len(icon)); n != want {
				t.Errorf("the check read %d bytes itself; want %d (the large file and the icon once, text files from the dispatcher's copy)", n, want)
			}
		})
	}
}

// TestUpstreamModelSignatures scans model directories signed by upstream
// model_signing v1.1.0 (the vectors of modelsig/testdata/upstream) under a
// policy naming upstream's public key: the ECDSA one verifies; the ML-DSA
// one, which mlwarden cannot verify, is neither a pass nor "invalid".
func TestUpstreamModelSignatures(t *testing.T) {
	vectors := filepath.Join("modelsig", "testdata", "upstream")
	key, err := filepath.Abs(filepath.Join(vectors, "keys", "certificate", "signing-key-pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		vector string
		want   []string
	}{
		{"v1.1.0-elliptic-key", nil},
		{"v1.1.0-ml-dsa", []string{"signatures/unverified high model/model.sig"}},
	} {
		t.Run(tt.vector, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(filepath.Join(dir, "model"), os.DirFS(filepath.Join(vectors, tt.vector))); err != nil {
				t.Fatal(err)
			}
			s, err := New(WithPolicy(Policy{Models: []ModelPolicy{{Path: "model", Authorities: []Authority{{Key: key}}}}}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := run(t, s, dir); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestNotManifestsNotBlobs: a file named like a manifest that holds none is
// one finding, not one per line; an attestation bundle with no file beside
// it (its subjects are inside) is no finding.
func TestNotManifestsNotBlobs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"tests/envelope.sha512":      "{\n  \"payloadType\": \"application/vnd.in-toto+json\",\n  \"signatures\": []\n}\n",
		"bundles/dsse.sigstore.json": `{"mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1", "dsseEnvelope": {"payload": "e30=", "payloadType": "application/vnd.in-toto+json", "signatures": []}}`,
	})
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{"signatures/manifest-malformed low tests/envelope.sha512"}
	if got := run(t, s, dir); !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// fsSource hands the named files of fsys to the sink, read through fsys
// only, under a target name that is a display name, not a path. With
// noFS the artifacts carry no FS, as a stream's or an image's do.
type fsSource struct {
	name  string
	kind  scanners.TargetKind
	fsys  fs.FS
	paths []string
	noFS  bool
}

func (f fsSource) Target() scanners.Target { return scanners.Target{Name: f.name, Kind: f.kind} }

func (f fsSource) Walk(ctx context.Context, sink scanners.Sink) error {
	for _, p := range f.paths {
		fi, err := fs.Stat(f.fsys, p)
		if err != nil {
			return err
		}
		r, err := f.fsys.Open(p)
		if err != nil {
			return err
		}
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: f.name, TargetKind: f.kind,
			Path: p, Size: fi.Size(), Mode: fi.Mode(), FS: f.fsys}
		if f.noFS {
			a.FS = nil
		}
		err = sink.Artifact(a, r)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// TestReadsThroughArtifactFS: the check reads a target's other files
// through Artifact.FS, never by reopening Artifact.Target, which is only
// the report's name. Here Target names nothing on disk (a directory
// target, and a file target SHA256SUMS whose FS is its directory), and the
// working directory is an empty one. Without an FS the manifest is not
// followed, as inside an image, even where Target is the real directory.
func TestReadsThroughArtifactFS(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.bin": "alpha", "b.bin": "bravo"})
	cmd := exec.Command("sha256sum", "a.bin", "b.bin")
	cmd.Dir = dir
	man, err := cmd.Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	write(t, dir, map[string]string{"SHA256SUMS": string(man), "b.bin": "bravO"})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	t.Chdir(t.TempDir())
	for _, tt := range []struct {
		name string
		src  fsSource
		want []string
	}{
		{"dir", fsSource{name: "registry.example/release (mounted)", kind: scanners.KindDir, fsys: root.FS(),
			paths: []string{"SHA256SUMS", "a.bin", "b.bin"}}, []string{"signatures/checksum-mismatch SHA256SUMS b.bin"}},
		{"file", fsSource{name: "no/such/dir/SHA256SUMS", kind: scanners.KindFile, fsys: root.FS(),
			paths: []string{"SHA256SUMS"}}, []string{"signatures/checksum-mismatch SHA256SUMS b.bin"}},
		{"no FS", fsSource{name: dir, kind: scanners.KindDir, fsys: root.FS(), paths: []string{"SHA256SUMS"}, noFS: true},
			[]string{"signatures/unverified SHA256SUMS"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res := scanners.NewDispatcher([]scanners.Scanner{s}).Run(context.Background(), tt.src)
			for _, e := range res.Errors {
				t.Errorf("error: %v", e)
			}
			var got []string
			for _, f := range res.Findings {
				if f.Target != tt.src.name {
					t.Errorf("finding on target %q, want %q", f.Target, tt.src.name)
				}
				w := f.RuleID + " " + f.Path
				if strings.Contains(f.Message, "b.bin") {
					w += " b.bin"
				}
				got = append(got, w)
			}
			sort.Strings(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestUnsignedExampleDeterministic: the example file an unsigned-directory
// finding names is the directory's first model file, whichever file the
// parallel walk reached first, so that its message and fingerprint are the
// same on every run.
func TestUnsignedExampleDeterministic(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for _, n := range []string{"d.safetensors", "b.npz", "c.pt", "a.bin", "e.onnx"} {
		files["m/"+n] = strings.Repeat("x", 100)
	}
	write(t, dir, files)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for range 20 {
		s, _ := New()
		res := scanners.NewDispatcher([]scanners.Scanner{s}, scanners.WithWorkers(8)).Run(context.Background(), scannertest.Source(dir, root.FS()))
		if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Message, "(e.g. a.bin)") {
			t.Fatalf("findings %+v", res.Findings)
		}
	}
}
