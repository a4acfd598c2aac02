// Package registrytest gives tests an OCI registry on loopback and pushes
// images to it with go-containerregistry.
//
// The registry is the CNCF distribution registry that .ci/registry.sh
// starts and names in MLWARDEN_TEST_REGISTRY=127.0.0.1:PORT, or, for tests
// that can do without it, go-containerregistry's in-process registry.
// Without the variable a test that needs the real registry skips, naming the
// command that starts one; under CI=true it fails instead, so a job that
// lost its registry never passes by skipping.
//
// The package is internal: it is test support for this module only.
package registrytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/mlwarden/mlwarden/internal/integration"
)

// Env names the variable that holds the registry's host:port.
const Env = "MLWARDEN_TEST_REGISTRY"

// StartCommand starts a registry and sets Env, in the shell that runs go
// test.
const StartCommand = "source .ci/registry.sh"

// Registry returns the host:port of the registry in MLWARDEN_TEST_REGISTRY,
// once it answers GET /v2/. When the variable is not set it skips the test,
// or fails it under CI=true; when the registry does not answer it fails the
// test.
func Registry(t testing.TB) string {
	t.Helper()
	host := os.Getenv(Env)
	if host == "" {
		integration.Skip(t, "a registry", Env+" is not set", StartCommand+" in the shell that runs go test")
	}
	if err := ping(host); err != nil {
		t.Fatalf("%s=%s: %v; start it again (%s) or unset %s", Env, host, err, StartCommand, Env)
	}
	integration.Ran(t, "the registry", host)
	return host
}

// ping checks that host answers the distribution API's version check.
func ping(host string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/", nil)
	if err != nil {
		return fmt.Errorf("registry check: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("registry does not answer: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("registry answers GET /v2/ with %s, want 200 OK", resp.Status)
	}
	return nil
}

// InProcess starts go-containerregistry's registry, with the referrers
// API, on 127.0.0.1 for the life of the test and returns its host:port.
func InProcess(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Any returns the registry in MLWARDEN_TEST_REGISTRY when the variable is
// set (see Registry), and otherwise an in-process one (InProcess), except
// under CI=true, where the variable must be set.
func Any(t testing.TB) string {
	t.Helper()
	if os.Getenv(Env) != "" || integration.CI() {
		return Registry(t)
	}
	return InProcess(t)
}

// Repo returns a repository on host that no other test uses, in this run
// or an earlier one against the same registry: host/mlwarden-test/ then
// the test's name and a random suffix.
func Repo(t testing.TB, host string) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return host + "/mlwarden-test/" + component(t.Name()) + "-" + hex.EncodeToString(b[:])
}

// component turns a test name into a repository path component: lower
// case letters and digits in runs joined by single hyphens.
func component(s string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
			if b.Len() >= 64 {
				break
			}
			continue
		}
		hyphen = true
	}
	if b.Len() == 0 {
		return "test"
	}
	return b.String()
}

// PushImage writes img under every ref and returns its digest.
func PushImage(t testing.TB, img v1.Image, refs ...string) v1.Hash {
	t.Helper()
	for _, ref := range refs {
		r := parse(t, ref)
		if err := remote.Write(r, img); err != nil {
			t.Fatalf("push %s: %v", ref, err)
		}
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// PushIndex writes idx under every ref and returns its digest.
func PushIndex(t testing.TB, idx v1.ImageIndex, refs ...string) v1.Hash {
	t.Helper()
	for _, ref := range refs {
		r := parse(t, ref)
		if err := remote.WriteIndex(r, idx); err != nil {
			t.Fatalf("push %s: %v", ref, err)
		}
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// PushRandom writes a random one-layer image under every ref and returns
// its digest: each call makes a new image.
func PushRandom(t testing.TB, refs ...string) v1.Hash {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	return PushImage(t, img, refs...)
}

func parse(t testing.TB, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return r
}
