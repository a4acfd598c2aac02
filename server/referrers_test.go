//go:build !mlwarden_sbatch

package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	corev1 "k8s.io/api/core/v1"

	"github.com/mlwarden/mlwarden/server"
	"github.com/mlwarden/mlwarden/server/verdict"
)

// cosignKeyPair writes a key pair in the format `cosign generate-key-pair`
// writes (an encrypted PKCS #8 key in an "ENCRYPTED SIGSTORE PRIVATE KEY"
// block and a PEM public key), generated at test time.
func cosignKeyPair(t *testing.T, password string) (keyPath, pubPath string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encrypted.Encrypt(der, []byte(password))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyPath, pubPath = filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: enc}), 0o600)
	os.WriteFile(pubPath, pub, 0o644)
	return keyPath, pubPath
}

func referrersStore(t *testing.T, keyPath, pubPath, password string) verdict.Store {
	t.Helper()
	ver, err := verdict.LoadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	opts := []verdict.ReferrersOption{verdict.WithVerifier(ver)}
	if keyPath != "" {
		sv, err := verdict.LoadCosignKey(keyPath, []byte(password))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, verdict.WithSigner(sv))
	}
	r, err := verdict.NewReferrers(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return verdict.Chain{verdict.NewMemory(), r}
}

// TestVerdictReferrers: one replica scans and writes the verdict to the
// registry as a signed referrer; a second replica, which cannot scan, answers
// from it; a third, trusting another key, ignores it.
func TestVerdictReferrers(t *testing.T) {
	reg := startRegistry(t, "", "")
	good, bad := testImages(t, reg)
	key, pub := cosignKeyPair(t, "pw")
	_, otherPub := cosignKeyPair(t, "pw2")
	cfg := server.DefaultConfig()
	cfg.NoVerdict = server.Deny

	review := func(url string, d name.Digest) (bool, string) {
		obj := podObject(t, func(p *corev1.Pod) { p.Spec.Containers[0].Image = d.String() })
		r := admit(t, url, reviewJSON(t, "r", "Pod", "", "pods", "CREATE", "ml", obj, false))
		return r.Allowed, message(r)
	}

	scanA := newCounting()
	a, hsA := startServer(t, server.WithScanner(scanA), server.WithConfig(cfg), server.WithRulesVersion("v1-ref"),
		server.WithStore(referrersStore(t, key, pub, "pw")))
	review(hsA.URL, good) // queued (no-verdict deny)
	review(hsA.URL, bad)
	waitVerdict(t, a, good, 20e9)
	waitVerdict(t, a, bad, 20e9)

	// The verdicts become referrers of the images in the registry (the
	// local store is written first, so wait for the push).
	for _, d := range []name.Digest{good, bad} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			idx, err := remote.Referrers(d)
			if err != nil {
				t.Fatal(err)
			}
			im, _ := idx.IndexManifest()
			if len(im.Manifests) == 1 && im.Manifests[0].ArtifactType == verdict.ArtifactType {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("referrers of %s: %+v", d, im.Manifests)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	scanB := newCounting()
	scanB.fail.Store(true)
	_, hsB := startServer(t, server.WithScanner(scanB), server.WithConfig(cfg), server.WithRulesVersion("v1-ref"),
		server.WithStore(referrersStore(t, "", pub, "")))
	if ok, msg := review(hsB.URL, good); !ok {
		t.Errorf("replica B denied the clean image: %s", msg)
	}
	if ok, msg := review(hsB.URL, bad); ok || !strings.Contains(msg, "secrets/test-marker") {
		t.Errorf("replica B: allowed=%v %s", ok, msg)
	}
	if n := scanB.n.Load(); n != 0 {
		t.Errorf("replica B scanned %d times; it should read the registry's verdicts", n)
	}

	// Another key: the verdicts do not verify, so there is none.
	_, hsC := startServer(t, server.WithScanner(scanB), server.WithConfig(cfg), server.WithRulesVersion("v1-ref"),
		server.WithStore(referrersStore(t, "", otherPub, "")))
	if ok, msg := review(hsC.URL, good); ok || !strings.Contains(msg, "no mlwarden verdict") {
		t.Errorf("replica C (other key): allowed=%v %s", ok, msg)
	}
	// Another rules version: not used either.
	_, hsD := startServer(t, server.WithScanner(scanB), server.WithConfig(cfg), server.WithRulesVersion("v1-newer"),
		server.WithStore(referrersStore(t, "", pub, "")))
	if ok, msg := review(hsD.URL, good); ok || !strings.Contains(msg, "no mlwarden verdict") {
		t.Errorf("replica D (newer rules): allowed=%v %s", ok, msg)
	}
}

// TestRegistryEventsSkipVerdicts: the verdict a replica pushes to the
// registry is announced like any push; it must not be scanned in turn.
func TestRegistryEventsSkipVerdicts(t *testing.T) {
	const token = "tok"
	key, pub := cosignKeyPair(t, "pw")
	sc := newCounting()
	cfg := eventsConfig(t, token)
	s, hs := startServer(t, server.WithScanner(sc), server.WithConfig(cfg),
		server.WithStore(referrersStore(t, key, pub, "pw")))
	reg := startRegistry(t, hs.URL+"/registry/events", token)
	d := pushImage(t, reg, "ml/loop", "v1", map[string]string{"a": "b"})
	waitVerdict(t, s, d, 20*time.Second)
	var verdictManifest name.Digest
	deadline := time.Now().Add(10 * time.Second)
	for {
		idx, err := remote.Referrers(d)
		if err != nil {
			t.Fatal(err)
		}
		im, _ := idx.IndexManifest()
		if len(im.Manifests) == 1 {
			verdictManifest = d.Context().Digest(im.Manifests[0].Digest.String())
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no verdict referrer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // the registry's events for the verdict arrive
	if n := sc.n.Load(); n != 1 {
		t.Errorf("scanned %d times, want 1: the verdict artifact was scanned", n)
	}
	if _, err := s.Verdict(t.Context(), verdictManifest); err == nil {
		t.Errorf("a verdict about a verdict")
	}
}
