//go:build !mlwarden_sbatch

package scan

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

func noEnvTC(string) (string, bool) { return "", false }

// tcToken is a fake Hugging Face token made from a seed at test time.
func tcToken(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed+7))
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := []byte("hf_")
	for range 34 {
		b = append(b, abc[r.IntN(len(abc))])
	}
	return string(b)
}

// tcDir is a directory with a leaked token and its own .mlwarden.yaml that
// ignores everything.
func tcDir(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "train.sh"), []byte("export HF_TOKEN="+tcToken(15)+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte("ignore:\n  - rule: \"*\"\n    reason: nothing to see here\n"), 0o644)
}

func tcRun(t *testing.T, flags map[string][]string, targets ...string) *Result {
	t.Helper()
	v, err := Configure("scan", flags, noEnvTC, targets)
	if err != nil {
		t.Fatal(err)
	}
	o, err := OptionsFrom(v)
	if err != nil {
		t.Fatal(err)
	}
	o.Checks = []string{"secrets"}
	sc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var ts []Target
	for _, r := range targets {
		ts = append(ts, Target{Ref: r})
	}
	res, err := sc.Run(context.Background(), ts...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTargetConfigShown: a scanned directory's own ignore-everything config
// is visible in the report (a note on the target, the file named in every
// suppression), and --no-target-config ignores it.
func TestTargetConfigShown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkout")
	tcDir(t, dir)
	res := tcRun(t, nil, dir)
	if len(res.Findings) == 0 {
		t.Fatal("no finding at all")
	}
	for _, f := range res.Findings {
		if !strings.Contains(f.Suppressed, filepath.Join(dir, ".mlwarden.yaml")) || !strings.Contains(f.Suppressed, "own config") {
			t.Errorf("suppression does not name the target's config: %q", f.Suppressed)
		}
	}
	noted := false
	for _, tg := range res.Targets {
		for _, n := range tg.Notes {
			noted = noted || strings.Contains(n, "its own .mlwarden.yaml") && strings.Contains(n, "1 finding(s) suppressed")
		}
	}
	if !noted {
		t.Errorf("no target note: %+v", res.Targets)
	}
	if res.Summary.Suppressed != 1 {
		t.Errorf("summary: %+v", res.Summary)
	}

	res = tcRun(t, map[string][]string{"no-target-config": {"true"}}, dir)
	if len(res.Findings) != 1 || res.Findings[0].Suppressed != "" {
		t.Errorf("--no-target-config: %+v", res.Findings)
	}
	for _, tg := range res.Targets {
		if len(tg.Notes) > 0 {
			t.Errorf("--no-target-config: note %q", tg.Notes)
		}
	}
}

// TestTargetConfigNotFromOtherSchemes: a directory that a scheme makes an
// image, a repository, a hub repository or a file never gives its
// .mlwarden.yaml, even when its name is a path that exists.
func TestTargetConfigNotFromOtherSchemes(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, scheme := range []string{"registry", "oci", "docker-archive", "git", "hf", "file"} {
		name := scheme + ":x"
		tcDir(t, name)
		v, err := Configure("scan", nil, noEnvTC, []string{name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f := v.File(); f != nil {
			t.Errorf("%s: read %s", name, f.Path)
		}
	}
	// The same directory as dir: is the user's.
	v, err := Configure("scan", nil, noEnvTC, []string{"dir:oci:x"})
	if err != nil || v.File() == nil || !v.File().FromTarget {
		t.Errorf("dir:oci:x: %v %v", v.File(), err)
	}
}

// counter is a loopback listener that counts what reaches it: an HTTP
// server (the attacker's "Hub") or a bare TCP port (the attacker's Redis).
type counter struct {
	n    atomic.Int64
	auth atomic.Int64
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	if r.Header.Get("Authorization") != "" {
		c.auth.Add(1)
	}
	http.NotFound(w, r)
}

func tcListen(t *testing.T, c *counter) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.n.Add(1)
			conn.Close()
		}
	}()
	return l.Addr().String()
}

// TestTargetConfigUserOnly: a scanned directory's own .mlwarden.yaml never
// chooses where the user's Hub token goes (hf.endpoint beat HF_ENDPOINT and
// got HF_TOKEN), which result cache is trusted (cache.backend: an
// attacker's Redis replaying "clean" results; cache.dir), which advisories
// judge it, or the memory and download ceilings; nor does it name files
// outside itself. Each refused key is a warning and a target note, the
// rest of the file (its ignore entries) still applies, and the user's own
// config (--config) still sets them all.
func TestTargetConfigUserOnly(t *testing.T) {
	evilHub, goodHub := &counter{}, &counter{}
	evil := httptest.NewServer(evilHub)
	defer evil.Close()
	good := httptest.NewServer(goodHub)
	defer good.Close()
	evilRedis := &counter{}
	redisAddr := tcListen(t, evilRedis)

	base := t.TempDir()
	dir := filepath.Join(base, "checkout")
	tcDir(t, dir)
	outside := filepath.Join(base, "outside.json")
	os.WriteFile(outside, []byte(`{"findings":[]}`), 0o644)
	cfg := "hf:\n  endpoint: " + evil.URL + "\n" +
		"cache:\n  backend: redis://" + redisAddr + "\n  dir: " + filepath.Join(base, "evilcache") + "\n  ttl: 87600h\n" +
		"vulns:\n  advisories: " + outside + "\n" +
		"baseline: ../outside.json\n" +
		"max-memory: 64GiB\ndownload-limit: 0\n" +
		"ignore:\n  - rule: \"*\"\n    reason: nothing to see here\n"
	os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte(cfg), 0o644)

	t.Setenv("HF_ENDPOINT", good.URL)
	t.Setenv("HF_TOKEN", tcToken(21))
	env := func(k string) (string, bool) { return os.LookupEnv(k) }
	v, err := Configure("scan", nil, env, []string{dir, "hf:org/model"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hf-endpoint", "cache-backend", "cache-dir", "cache-ttl", "advisories", "baseline", "max-memory", "download-limit"} {
		if v.Set(name) {
			t.Errorf("%s taken from the target's config: %s", name, v.Value(name).Where)
		}
	}
	refused := map[string]bool{}
	for _, r := range v.File().Refused {
		refused[r.Key] = true
		if w := r.String(v.File().Path); strings.Contains(w, evil.URL) || strings.Contains(w, redisAddr) || strings.Contains(w, "outside.json") {
			t.Errorf("warning echoes the value: %s", w)
		}
	}
	for _, k := range []string{"hf.endpoint", "cache.backend", "cache.dir", "cache.ttl", "vulns.advisories", "baseline", "max-memory", "download-limit"} {
		if !refused[k] {
			t.Errorf("%s: not in Refused %+v", k, v.File().Refused)
		}
	}
	o, err := OptionsFrom(v)
	if err != nil {
		t.Fatal(err)
	}
	o.Checks = []string{"secrets"}
	var warnings []string
	o.Warn = func(w string) { warnings = append(warnings, w) }
	sc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	res, err := sc.Run(context.Background(), Target{Ref: dir}, Target{Ref: "hf:org/model"})
	if err != nil {
		t.Fatal(err)
	}
	if n := evilHub.n.Load(); n != 0 {
		t.Errorf("the target's hf.endpoint got %d request(s), %d with the token", n, evilHub.auth.Load())
	}
	if goodHub.n.Load() == 0 {
		t.Error("HF_ENDPOINT got no request")
	}
	if n := evilRedis.n.Load(); n != 0 {
		t.Errorf("the target's cache.backend got %d connection(s)", n)
	}
	if _, err := os.Stat(filepath.Join(base, "evilcache")); err == nil {
		t.Error("the target's cache.dir was written")
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "hf.endpoint: not taken") }) {
		t.Errorf("no warning for hf.endpoint: %q", warnings)
	}
	noted := false
	for _, tg := range res.Targets {
		for _, n := range tg.Notes {
			noted = noted || strings.Contains(n, "not taken:") && strings.Contains(n, "hf.endpoint (line 2: it would choose where the Hub token is sent)")
		}
	}
	if !noted {
		t.Errorf("no target note: %+v", res.Targets)
	}
	// The ignore entries still apply (and are shown, as before).
	if res.Summary.Suppressed == 0 {
		t.Errorf("the target's ignore entries no longer apply: %+v", res.Summary)
	}

	// The same file named with --config is the user's own: all taken.
	v, err = Configure("scan", map[string][]string{"config": {filepath.Join(dir, ".mlwarden.yaml")}}, env, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Set("hf-endpoint") || !v.Set("cache-backend") || len(v.File().Refused) != 0 {
		t.Errorf("--config: hf-endpoint %v, cache-backend %v, refused %+v", v.Set("hf-endpoint"), v.Set("cache-backend"), v.File().Refused)
	}
}

// TestTargetConfigPathsInside: a path setting of a target's config that
// stays inside the directory is taken; one through a symlink out is not.
func TestTargetConfigPathsInside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "checkout")
	tcDir(t, dir)
	os.WriteFile(filepath.Join(base, "rules.toml"), []byte("title = \"x\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "rules.toml"), []byte("title = \"x\"\n"), 0o644)
	os.Symlink(filepath.Join(base, "rules.toml"), filepath.Join(dir, "out.toml"))
	for _, c := range []struct {
		path  string
		taken bool
	}{{"rules.toml", true}, {"./sub/../rules.toml", true}, {"out.toml", false}, {"../rules.toml", false}, {filepath.Join(dir, "rules.toml"), false}} {
		os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
		os.WriteFile(filepath.Join(dir, ".mlwarden.yaml"), []byte("secrets:\n  config: "+c.path+"\n"), 0o644)
		v, err := Configure("scan", nil, noEnvTC, []string{dir})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if v.Set("secrets-config") != c.taken {
			t.Errorf("%s: taken %v, want %v (refused %+v)", c.path, v.Set("secrets-config"), c.taken, v.File().Refused)
		}
	}
}
