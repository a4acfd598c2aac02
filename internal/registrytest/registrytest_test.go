package registrytest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// stopTB records how a helper ended the test: Skip and Fatal stop the
// helper, as the real ones do, by panicking out of it.
type stopTB struct {
	testing.TB
	name    string
	skipped string
	failed  string
}

type stopped struct{}

func (s *stopTB) Helper()      {}
func (s *stopTB) Name() string { return s.name }
func (s *stopTB) Skipf(format string, args ...any) {
	s.skipped = fmt.Sprintf(format, args...)
	panic(stopped{})
}
func (s *stopTB) Fatalf(format string, args ...any) {
	s.failed = fmt.Sprintf(format, args...)
	panic(stopped{})
}
func (s *stopTB) Fatal(args ...any) { s.Fatalf("%s", fmt.Sprint(args...)) }

// call runs fn with a stopTB and returns what it returned and how it ended.
func call(t *testing.T, fn func(testing.TB) string) (got string, tb *stopTB) {
	tb = &stopTB{TB: t, name: t.Name()}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stopped); !ok {
				panic(p)
			}
		}
	}()
	return fn(tb), tb
}

func TestRegistry(t *testing.T) {
	local := InProcess(t)
	for _, tc := range []struct {
		name, env, ci   string
		want            string
		skipped, failed string
	}{
		{"not set", "", "", "", "to run it: source .ci/registry.sh", ""},
		{"not set in CI", "", "true", "", "", "CI=true but a registry is missing: MLWARDEN_TEST_REGISTRY is not set"},
		{"set", local, "true", local, "", ""},
		{"gone", "127.0.0.1:1", "", "", "", "MLWARDEN_TEST_REGISTRY=127.0.0.1:1: registry does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(Env, tc.env)
			t.Setenv("CI", tc.ci)
			got, tb := call(t, Registry)
			if got != tc.want || !contains(tb.skipped, tc.skipped) || !contains(tb.failed, tc.failed) {
				t.Errorf("got %q, skipped %q, failed %q; want %q, skip %q, fail %q", got, tb.skipped, tb.failed, tc.want, tc.skipped, tc.failed)
			}
		})
	}
}

// contains reports whether s holds want, and is empty when want is.
func contains(s, want string) bool {
	if want == "" {
		return s == ""
	}
	return strings.Contains(s, want)
}

func TestAny(t *testing.T) {
	t.Setenv(Env, "")
	t.Setenv("CI", "")
	host, tb := call(t, Any)
	if tb.skipped != "" || tb.failed != "" || !strings.HasPrefix(host, "127.0.0.1:") {
		t.Fatalf("no registry: got %q, %+v", host, tb)
	}
	t.Setenv("CI", "true")
	if _, tb := call(t, Any); tb.failed == "" {
		t.Error("CI without a registry: Any did not fail")
	}
}

func TestRepoAndPush(t *testing.T) {
	host := InProcess(t)
	a, b := Repo(t, host), Repo(t, host)
	if a == b || !strings.HasPrefix(a, host+"/mlwarden-test/testrepoandpush-") {
		t.Errorf("repos %q, %q", a, b)
	}
	d := PushRandom(t, a+":1", a+":2")
	for _, tag := range []string{"1", "2"} {
		ref, err := name.ParseReference(a + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(ref)
		if err != nil || desc.Digest != d {
			t.Errorf("%s: %v, %v; want %s", ref, desc, err, d)
		}
	}
	if PushRandom(t, a+":1") == d {
		t.Error("PushRandom pushed the same image twice")
	}
}

func TestComponent(t *testing.T) {
	for in, want := range map[string]string{
		"TestImagePlatforms/registry":       "testimageplatforms-registry",
		"TestX/a_b__c--d":                   "testx-a-b-c-d",
		"//":                                "test",
		strings.Repeat("Ab", 50):            strings.Repeat("ab", 32),
		"TestRewrite/#00/kubernetes (yaml)": "testrewrite-00-kubernetes-yaml",
	} {
		got := component(in)
		if got != want {
			t.Errorf("component(%q) = %q, want %q", in, got, want)
		}
		if _, err := name.NewRepository("127.0.0.1:5000/mlwarden-test/" + got + "-0a1b2c3d"); err != nil {
			t.Errorf("component(%q) = %q: %v", in, got, err)
		}
	}
}

// TestPushToRegistry pushes an index to the registry CI starts.
func TestPushToRegistry(t *testing.T) {
	repo := Repo(t, Registry(t))
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	d := PushIndex(t, idx, repo+":multi")
	ref, err := name.ParseReference(repo + ":multi")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref)
	if err != nil || desc.Digest != d {
		t.Errorf("%s: %v, %v; want %s", ref, desc, err, d)
	}
}
