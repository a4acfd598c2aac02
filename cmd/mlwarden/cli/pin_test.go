//go:build !mlwarden_sbatch

package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/registrytest"
)

func runPinCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader("")}
	cmd := newPinCmd(a)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	code = a.code
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if err != nil {
		code = ExitError
	}
	return out.String(), errb.String(), code
}

func TestPinCommand(t *testing.T) {
	host := registrytest.Any(t)
	d := registrytest.PushRandom(t, host+"/ml/train:1")
	dir := t.TempDir()
	df := filepath.Join(dir, "Dockerfile")
	orig := "# base image\nFROM " + host + "/ml/train:1   # comment kept\nRUN true\n"
	if err := os.WriteFile(df, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}

	out, _, code := runPinCmd(t, "--dry-run", df)
	if code != 0 || !strings.Contains(out, "-FROM "+host+"/ml/train:1   # comment kept") || !strings.Contains(out, "+FROM "+host+"/ml/train:1@"+d.String()+"   # comment kept") {
		t.Errorf("dry run: code %d, diff:\n%s", code, out)
	}
	if b, _ := os.ReadFile(df); string(b) != orig {
		t.Errorf("dry run wrote the file")
	}

	out, errOut, code := runPinCmd(t, df)
	want := strings.Replace(orig, "/ml/train:1", "/ml/train:1@"+d.String(), 1)
	if b, _ := os.ReadFile(df); code != 0 || string(b) != want {
		t.Errorf("pin: code %d, stderr %q, file:\n%s", code, errOut, b)
	}
	if fi, _ := os.Stat(df); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %v", fi.Mode())
	}
	if !strings.Contains(out, "Dockerfile:2: ") {
		t.Errorf("no edit line: %q", out)
	}

	// Unknown kinds, missing files and unresolvable tags exit 2.
	md := filepath.Join(dir, "notes.md")
	os.WriteFile(md, []byte("x"), 0o644)
	if _, _, code := runPinCmd(t, md); code != ExitError {
		t.Errorf("markdown: code %d", code)
	}
	if _, _, code := runPinCmd(t, filepath.Join(dir, "missing")); code != ExitError {
		t.Errorf("missing file: code %d", code)
	}
	bad := filepath.Join(dir, "bad.Dockerfile")
	os.WriteFile(bad, []byte("FROM "+host+"/ml/none:1\n"), 0o644)
	if _, _, code := runPinCmd(t, bad); code != ExitError {
		t.Errorf("unknown tag: code %d", code)
	}
	if _, _, code := runPinCmd(t); code != ExitError {
		t.Errorf("no args: code %d", code)
	}
}

// TestPinActions: uses: is pinned to the commit the GitHub API names, with
// the tag kept as a comment; --offline asks nothing and says so.
func TestPinActions(t *testing.T) {
	sha := strings.Repeat("c", 40)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/repos/actions/checkout/commits/v4" || r.Header.Get("Accept") != "application/vnd.github.sha" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(sha))
	}))
	defer api.Close()
	gh := filepath.Join(t.TempDir(), ".github", "workflows")
	if err := os.MkdirAll(gh, 0o755); err != nil {
		t.Fatal(err)
	}
	wf2 := filepath.Join(gh, "ci.yml")
	orig := "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
	if err := os.WriteFile(wf2, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runPinCmd(t, "--offline", wf2)
	if b, _ := os.ReadFile(wf2); code != 0 || string(b) != orig || !strings.Contains(errOut, "cannot resolve offline") || out != "" {
		t.Errorf("offline: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runPinCmd(t, "--github-api", api.URL, wf2)
	want := strings.Replace(orig, "actions/checkout@v4", "actions/checkout@"+sha+" # v4", 1)
	if b, _ := os.ReadFile(wf2); code != 0 || string(b) != want || !strings.Contains(out, "-> actions/checkout@"+sha+" # v4") {
		t.Errorf("pin: code %d, stdout %q, stderr %q, file:\n%s", code, out, errOut, b)
	}
}
