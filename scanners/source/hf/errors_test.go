//go:build !mlwarden_sbatch

package hf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
)

// env is an environment of the given variables.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// sleeps records the waits between tries instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return nil
}

// TestErrors: what a user can act on, exit 2, and the other files'
// findings kept.
func TestErrors(t *testing.T) {
	dir := modelRepo(t)
	files, err := hubtest.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(s *hubtest.Server, commit string) (ref string, o hf.Options)
		want  []string // in the errors, in order of appearance
		path  string   // the file the error is about ("" for the target)
		waits []time.Duration
		kept  bool // the other files' findings are in the report
	}{
		{name: "repository not found", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			return "hf:org/nothing@main", hf.Options{}
		}, want: []string{"hf:org/nothing@main: repository not found or not accessible (401 Unauthorized)", "if it is private or gated, pass a token with read access in HF_TOKEN, or log in with `hf auth login`"}},
		{name: "not found with a token", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			return "hf:org/nothing", hf.Options{Getenv: env("HF_TOKEN", s.Token())}
		}, want: []string{"repository not found or not accessible (404 Not Found)", "that the token from HF_TOKEN can read it"}},
		{name: "private without a token", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.Add(&hubtest.Repo{ID: "org/private", Private: true, Refs: map[string]string{"main": c}, Commits: map[string][]hubtest.File{c: files}})
			return "hf:org/private@" + c, hf.Options{}
		}, want: []string{"repository not found or not accessible (401 Unauthorized)", "HF_TOKEN"}},
		{name: "gated without a token", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.Add(&hubtest.Repo{ID: "org/gated", Gated: true, Refs: map[string]string{"main": c}, Commits: map[string][]hubtest.File{c: files}})
			return "hf:org/gated@" + c, hf.Options{}
		}, want: []string{"gated repository: pass a token with read access in HF_TOKEN", "after accepting the repository's conditions"}},
		{name: "gated, token without access", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.Add(&hubtest.Repo{ID: "org/gated", Gated: true, Refs: map[string]string{"main": c}, Commits: map[string][]hubtest.File{c: files}})
			return "hf:org/gated@" + c, hf.Options{Getenv: env("HF_TOKEN", s.Token())}
		}, want: []string{"gated repository: accept the repository's conditions on its page while logged in as the owner of the token from HF_TOKEN"}},
		{name: "token refused", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			return "hf:org/custom@" + c, hf.Options{Getenv: env("HF_TOKEN", "hf_"+strings.Repeat("x", 34))}
		}, want: []string{"the Hub refused the token from HF_TOKEN: create a new one at"}},
		{name: "revision not found", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			return "hf:org/custom@v9", hf.Options{}
		}, want: []string{"hf:org/custom@v9: revision not found: name a branch, tag or full commit"}},
		{name: "rate limited, then served", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.RateLimit(2, 7)
			return "hf:org/custom@" + c, hf.Options{}
		}, waits: []time.Duration{8 * time.Second, 8 * time.Second}, kept: true},
		{name: "rate limited past the retries", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.RateLimit(100, 0)
			return "hf:org/custom@" + c, hf.Options{}
		}, want: []string{"rate limited by 127.0.0.1:", "after 5 tries", "or pass a token with read access in HF_TOKEN"},
			waits: []time.Duration{time.Second, time.Second, time.Second, time.Second}},
		{name: "rate limited for longer than MaxWait", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.RateLimit(1, 3600)
			return "hf:org/custom@" + c, hf.Options{}
		}, want: []string{"rate limited", "after 1 tries (it asks to wait 1h0m1s)"}},
		{name: "LFS file grew since the listing", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.SetFault("model.safetensors", hubtest.FaultChangedSize)
			return "hf:org/custom@" + c, hf.Options{}
		}, path: "model.safetensors", want: []string{"changed between listing and download", "the Hub says", "bytes, the tree lists"}, kept: true},
		{name: "small file with other bytes", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.SetFault("config.json", hubtest.FaultChangedBytes)
			return "hf:org/custom@" + c, hf.Options{}
		}, path: "config.json", want: []string{"changed between listing and download", "the bytes' git blob id is"}, kept: true},
		{name: "redirect to plain HTTP", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.SetFault("model.safetensors", hubtest.FaultInsecureRedirect)
			return "hf:org/custom@" + c, hf.Options{}
		}, path: "model.safetensors", want: []string{"refused a redirect to plain HTTP at cdn.example.invalid"}, kept: true},
		{name: "server ignores Range", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			s.SetFault("tokenizer.json", hubtest.FaultNoRange)
			return "hf:org/custom@" + c, hf.Options{}
		}, path: "tokenizer.json", want: []string{"the server does not honour byte ranges"}, kept: true},
		{name: "download limit", setup: func(s *hubtest.Server, c string) (string, hf.Options) {
			return "hf:org/custom@" + c, hf.Options{DownloadLimit: 64 << 10}
		}, path: "*", want: []string{"not downloaded:", "would take this target past --download-limit 64.0 KiB"}, kept: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := hubtest.New(t)
			commit := srv.AddFiles("org/custom", files)
			ref, o := c.setup(srv, commit)
			o.Endpoint = srv.Endpoint()
			if o.Getenv == nil {
				o.Getenv = noEnv
			}
			sl := &sleeps{}
			hf.SetSleep(&o, sl.sleep)
			res := run(t, o, nil, ref)
			if len(c.want) == 0 {
				if len(res.Errors) > 0 {
					t.Fatalf("errors: %+v", res.Errors)
				}
			} else {
				found := false
				for _, e := range res.Errors {
					msg := e.Message
					ok := (e.Path == c.path || c.path == "*" && e.Path != "") && e.Target == ref
					for _, w := range c.want {
						i := strings.Index(msg, w)
						ok = ok && i >= 0
						if i >= 0 {
							msg = msg[i+len(w):]
						}
					}
					found = found || ok
				}
				if !found {
					t.Errorf("no error at %q with %q in %+v", c.path, c.want, res.Errors)
				}
				if code := scan.ExitCode(res, nil); code != scan.ExitError {
					t.Errorf("exit code %d, want 2", code)
				}
			}
			if c.kept && len(findings(res, ref)) < 20 {
				t.Errorf("only %d findings: the other files' findings were not kept", len(findings(res, ref)))
			}
			if !equalDurations(sl.d, c.waits) {
				t.Errorf("waits %v, want %v", sl.d, c.waits)
			}
			if c.name == "download limit" && !strings.Contains(strings.Join(target(res, ref).Notes, "\n"), "--download-limit 64.0 KiB reached:") {
				t.Errorf("no note of the limit: %q", target(res, ref).Notes)
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTokenNeverShown: the token reaches the Hub and only the Hub (the
// file host refuses a request that carries one), and no output holds it.
func TestTokenNeverShown(t *testing.T) {
	dir := modelRepo(t)
	files, err := hubtest.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := hubtest.New(t)
	commit := srv.AddFiles("org/public", files)
	tok := srv.Token("model/org/private")
	srv.Add(&hubtest.Repo{ID: "org/private", Private: true, Refs: map[string]string{"main": commit}, Commits: map[string][]hubtest.File{commit: files}})
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "token"), []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := hf.Options{Endpoint: srv.Endpoint(), Getenv: env("HF_HOME", home)}
	res := run(t, o, nil, "hf:org/private@"+commit, "hf:org/nothing")
	var out bytes.Buffer
	for _, format := range []string{"json", "text", "sarif"} {
		if err := reports.Write(&out, format, res, reports.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(out.String(), tok) {
		t.Fatal("the token is in a report")
	}
	var errs []scanners.Error
	for _, e := range res.Errors {
		if e.Target == "hf:org/private@"+commit {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		t.Fatalf("the private repository with the token file's token: %+v", errs)
	}
	if !strings.Contains(out.String(), "the token file "+filepath.Join(home, "token")) {
		t.Errorf("the error for the missing repository does not say where the token came from")
	}
	j, _ := json.Marshal(res)
	if strings.Contains(string(j), tok) {
		t.Fatal("the token is in the result")
	}
}

func TestFindToken(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "token"), []byte("  from-file\n"), 0o600)
	other := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(other, []byte("from-path"), 0o600)
	cache := t.TempDir()
	os.MkdirAll(filepath.Join(cache, "huggingface"), 0o755)
	os.WriteFile(filepath.Join(cache, "huggingface", "token"), []byte("from-xdg"), 0o600)
	cases := []struct {
		env        []string
		value, src string
	}{
		{[]string{"HF_TOKEN", "a", "HUGGING_FACE_HUB_TOKEN", "b", "HF_HOME", home}, "a", "HF_TOKEN"},
		{[]string{"HUGGING_FACE_HUB_TOKEN", "b", "HF_HOME", home}, "b", "HUGGING_FACE_HUB_TOKEN"},
		{[]string{"HF_HOME", home}, "from-file", "the token file " + filepath.Join(home, "token")},
		{[]string{"HF_TOKEN_PATH", other, "HF_HOME", home}, "from-path", "the token file " + other},
		{[]string{"XDG_CACHE_HOME", cache}, "from-xdg", "the token file " + filepath.Join(cache, "huggingface", "token")},
		{[]string{"HOME", t.TempDir()}, "", ""},
		{[]string{"HF_TOKEN", "  "}, "", ""},
	}
	for _, c := range cases {
		tok := hf.FindToken(env(c.env...))
		if hf.TokenValue(tok) != c.value || tok.From != c.src {
			t.Errorf("%v: %q from %q, want %q from %q", c.env, hf.TokenValue(tok), tok.From, c.value, c.src)
		}
		if c.value != "" && strings.Contains(tok.String(), c.value) {
			t.Errorf("String() shows the value: %s", tok)
		}
	}
}

func TestEndpointChecks(t *testing.T) {
	cases := []struct {
		endpoint string
		env      []string
		want     string
	}{
		{"http://hub.example.com", []string{"HF_TOKEN", "x"}, "is plain HTTP: refusing to send the Hub token (token from HF_TOKEN)"},
		{"ftp://hub.example.com", nil, "want an http(s) URL"},
		{"https://user:pw@hub.example.com", nil, "a user or password in the URL is not accepted"},
	}
	for _, c := range cases {
		_, err := hf.Open(context.Background(), "org/m", hf.Options{Endpoint: c.endpoint, Getenv: env(c.env...)})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: %v, want %q", c.endpoint, err, c.want)
		}
	}
	// Plain HTTP without a token, or on loopback, is the user's choice.
	for _, ep := range []string{"http://hub.example.com", "http://127.0.0.1:9"} {
		if _, err := hf.Open(context.Background(), "org/m", hf.Options{Endpoint: ep, Getenv: env("HF_TOKEN", "x")}); err != nil && !strings.Contains(ep, "example") {
			t.Errorf("%s: %v", ep, err)
		}
	}
	// HF_ENDPOINT is the default endpoint; datasets and spaces have their
	// own API paths and resolve prefixes; a revision with "/" is one
	// segment.
	srv := hubtest.New(t)
	commit := srv.AddFiles("org/m", []hubtest.File{hubtest.Bytes("a.txt", []byte("hello"), false)})
	files := []hubtest.File{hubtest.Bytes("train.py", []byte("import torch\ntorch.load('x.pt')\n"), false), hubtest.Bytes("data/x.pkl", []byte("\x80\x02cos\nsystem\nq\x00."), true)}
	srv.Add(&hubtest.Repo{Type: "dataset", ID: "org/d", Refs: map[string]string{"refs/convert/parquet": commit}, Commits: map[string][]hubtest.File{commit: files}})
	srv.Add(&hubtest.Repo{Type: "space", ID: "org/s", Refs: map[string]string{"main": commit}, Commits: map[string][]hubtest.File{commit: files}})
	res := run(t, hf.Options{Getenv: env("HF_ENDPOINT", srv.Endpoint()+"/")}, nil, "hf:org/m", "hf:datasets/org/d@refs/convert/parquet", "hf:spaces/org/s@"+commit)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	for _, name := range []string{"hf:datasets/org/d@refs/convert/parquet", "hf:spaces/org/s@" + commit} {
		rules := map[string]bool{}
		for _, f := range findings(res, name) {
			rules[f.RuleID] = true
		}
		if !rules["pins/torch-load-unsafe"] || !rules["models/pickle-dangerous-global"] {
			t.Errorf("%s: findings %v", name, rules)
		}
		if strings.HasPrefix(name, "hf:datasets") != rules["pins/hub-revision-branch"] {
			t.Errorf("%s: pins/hub-revision-branch %v", name, rules["pins/hub-revision-branch"])
		}
	}
}
