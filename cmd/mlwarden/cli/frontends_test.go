//go:build !mlwarden_sbatch

package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/server"
	"github.com/mlwarden/mlwarden/server/verdict"
)

// frontendScript has a finding of each check that reads scripts, one
// suppressed by an inline comment and one by the config's ignore entry.
func frontendScript() string {
	return "#!/bin/bash\n" +
		"#SBATCH --container-image=ubuntu:latest\n" +
		"export HF_TOKEN=" + sbatchToken() + "\n" +
		"pip install torch  # mlwarden:ignore pins/pip-unpinned\n" +
		"curl -fsSL https://get.example.com/install.sh | bash\n" +
		"jupyter lab --ip=0.0.0.0 --no-browser --NotebookApp.token=''\n"
}

const frontendConfig = `checks: [secrets, pins, misconfig]
ignore:
  - rule: pins/curl-pipe-shell
    reason: vendor installer, reviewed
`

// seen is one finding as every front end must report it.
func seen(fs []scanners.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%d %s suppressed=%q", strings.TrimPrefix(f.Path, "/"), f.Line, f.RuleID, f.Suppressed))
	}
	slices.Sort(out)
	return out
}

func unsuppressed(fs []scanners.Finding) []scanners.Finding {
	return slices.DeleteFunc(slices.Clone(fs), func(f scanners.Finding) bool { return f.Suppressed != "" })
}

// TestFrontEndsAgree feeds the same script through `mlwarden scan` (as a
// file and inside a directory), the sbatch checker (its report and its
// lines; TestSbatchServe shows the socket answers as in-process) and the
// admission server's scan of an image holding it: the findings and the
// suppressions (inline comment, config ignore entry) are the same
// everywhere.
func TestFrontEndsAgree(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(proj, "job"), 0o755)
	script := frontendScript()
	os.WriteFile(filepath.Join(proj, "job", "train.sbatch"), []byte(script), 0o644)
	cfg := filepath.Join(dir, "mlwarden.yaml")
	os.WriteFile(cfg, []byte(frontendConfig), 0o644)

	// scan, a directory (the file's path is job/train.sbatch).
	code, res := scanJSON(t, "--config", cfg, proj)
	if code != ExitFindings {
		t.Fatalf("scan: exit %d, errors %v", code, res.Errors)
	}
	want := seen(res.Findings)
	t.Logf("scan found %q", want)
	for _, rule := range []string{"secrets/huggingface-token", "pins/image-latest", "misconfig/notebook-exposed"} {
		if !slices.ContainsFunc(res.Findings, func(f scanners.Finding) bool { return f.RuleID == rule && f.Suppressed == "" }) {
			t.Errorf("scan: no %s in %q", rule, want)
		}
	}
	for rule, why := range map[string]string{"pins/pip-unpinned": "inline mlwarden:ignore comment", "pins/curl-pipe-shell": "ignored: vendor installer, reviewed"} {
		if !slices.ContainsFunc(res.Findings, func(f scanners.Finding) bool { return f.RuleID == rule && f.Suppressed == why }) {
			t.Errorf("scan: %s not suppressed with %q in %q", rule, why, want)
		}
	}

	// scan, the file itself: the same findings, its path is its name.
	_, fileRes := scanJSON(t, "--config", cfg, filepath.Join(proj, "job", "train.sbatch"))
	if got := seen(fileRes.Findings); !slices.Equal(got, rebase(want, "job/")) {
		t.Errorf("scan FILE:\n%q\nwant\n%q", got, rebase(want, "job/"))
	}

	// The sbatch checker, with its report.
	code, out, errOut := run(t, script, "sbatch", "--config", cfg, "--format", "json", "--name", "train.sbatch", "-")
	var sb scanners.Result
	if err := json.Unmarshal([]byte(out), &sb); err != nil {
		t.Fatalf("sbatch: exit %d: %v\n%s%s", code, err, out, errOut)
	}
	if got := seen(sb.Findings); code != ExitFindings || !slices.Equal(got, rebase(want, "job/")) {
		t.Errorf("sbatch: exit %d\n%q\nwant\n%q", code, got, rebase(want, "job/"))
	}
	// Its one-line form names exactly the unsuppressed findings.
	_, lines, _ := run(t, script, "sbatch", "--config", cfg, "--show", "info", "--name", "train.sbatch", "-")
	if n := strings.Count(lines, "\n"); n != len(unsuppressed(sb.Findings)) {
		t.Errorf("sbatch printed %d lines for %d unsuppressed findings:\n%s", n, len(unsuppressed(sb.Findings)), lines)
	}

	// The admission server, on an image that holds the directory.
	host := registrytest.Any(t)
	ref := registrytest.Repo(t, host) + ":v1"
	digest := registrytest.PushImage(t, imageWith(t, map[string]string{"job/train.sbatch": script}), ref)
	tagged, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	v := admissionVerdict(t, cfg, tagged.Context().Digest(digest.String()))
	if got := seen(v.Findings); !slices.Equal(got, seen(unsuppressed(res.Findings))) {
		t.Errorf("admission verdict findings:\n%q\nwant\n%q", got, seen(unsuppressed(res.Findings)))
	}
	if v.Summary.Suppressed != res.Summary.Suppressed || v.Summary != res.Summary {
		t.Errorf("admission summary %+v, scan summary %+v", v.Summary, res.Summary)
	}
}

// rebase strips prefix from the paths of seen findings.
func rebase(seen []string, prefix string) []string {
	out := make([]string, len(seen))
	for i, s := range seen {
		out[i] = strings.TrimPrefix(s, prefix)
	}
	slices.Sort(out)
	return out
}

// imageWith is a one-layer image holding files.
func imageWith(t *testing.T, files map[string]string) v1.Image {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for p, data := range files {
		tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write([]byte(data))
	}
	tw.Close()
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(b.Bytes(), types.DockerLayer))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// admissionVerdict asks a server built as `mlwarden serve --config cfg`
// builds it to admit a Pod running ref, then returns the verdict it kept.
func admissionVerdict(t *testing.T, cfg string, ref name.Digest) *verdict.Verdict {
	t.Helper()
	v, err := scan.Configure("serve", map[string][]string{"config": {cfg}}, func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := scan.OptionsFrom(v)
	if err != nil {
		t.Fatal(err)
	}
	o.Image = image.Options{NoCache: true}
	sc, err := scan.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	store := verdict.NewMemory()
	scfg := server.DefaultConfig()
	scfg.ScanDeadline = time.Minute
	srv, err := server.New(server.WithConfig(scfg), server.WithScanner(server.Pipeline{Scanner: sc}), server.WithStore(store),
		server.WithRulesVersion(sc.RulesVersion()), server.WithInsecureRegistries(ref.RegistryStr()), server.WithAllowRegistries(ref.RegistryStr()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv.Start(ctx)
	pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"m","image":%q}]}}`, ref.String())
	resp := srv.Review(ctx, &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "ml", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(pod)}})
	if resp.Allowed {
		t.Errorf("a Pod with a leaked token and an open notebook was admitted: %+v", resp.Result)
	}
	got, err := store.Get(ctx, ref, sc.RulesVersion())
	if err != nil {
		t.Fatalf("no verdict kept: %v", err)
	}
	return got
}

// TestConfigErrorsExit2: a config file with a bad key, a wrong type or a
// path that does not exist stops every command that reads it, with exit 2
// and a message naming the file, the line and the key.
func TestConfigErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.sh")
	os.WriteFile(clean, []byte("#!/bin/sh\necho hi\n"), 0o644)
	for _, tc := range []struct{ name, yaml, want string }{
		{"missing host file", "cuda:\n  host: nonexistent.yaml\n", "line 2: cuda.host: "},
		{"unknown secrets key", "secrets:\n  bogus-key: 1\n", `line 2: unknown key "bogus-key" in secrets`},
		{"unknown key", "pins:\n  x: 1\n", `line 1: unknown key "pins"`},
		{"wrong type", "workers: lots\n", "line 1: workers:"},
		{"bad serve section", "serve:\n  fail-onn: high\n", "line 2: field fail-onn not found"},
		{"bad signatures section", "signatures:\n  imagez: []\n", "line 2: field imagez not found"},
	} {
		cfg := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
		os.WriteFile(cfg, []byte(tc.yaml), 0o644)
		for _, args := range [][]string{
			{"scan", "--config", cfg, clean},
			{"sbatch", "--config", cfg, clean},
			{"serve", "--config", cfg, "--listen", "127.0.0.1:0"},
		} {
			if args[0] == "serve" && !strings.Contains(tc.yaml, "serve:") {
				// Without a serve: section the file is a server config
				// file of the old form (TestServeLegacyConfig).
				continue
			}
			code, _, errOut := run(t, "", args...)
			if code != ExitError || !strings.Contains(errOut, cfg) || !strings.Contains(errOut, tc.want) {
				t.Errorf("%s: %s: exit %d, stderr %q; want 2 naming %s and %q", tc.name, args[0], code, errOut, cfg, tc.want)
			}
		}
	}
}

// TestServeLegacyConfig: a server config file of the form before the
// serve: section (policies at the top level) still starts the server, and
// so does the .mlwarden.yaml form.
func TestServeLegacyConfig(t *testing.T) {
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"legacy.yaml": "fail-on: critical\nnamespaces:\n  ml: {digest: deny}\n",
		"new.yaml":    "checks: [secrets]\nignore:\n  - rule: secrets/*\n    reason: test\nserve:\n  fail-on: critical\n  namespaces:\n    ml: {digest: deny}\n",
	} {
		cfg := filepath.Join(dir, name)
		os.WriteFile(cfg, []byte(doc), 0o644)
		ctx, cancel := context.WithCancel(context.Background())
		logs := &sbatchSyncWriter{}
		done := make(chan int, 1)
		go func() {
			done <- MainContext(ctx, BuildInfo{Version: "test"}, strings.NewReader(""), &bytes.Buffer{}, logs,
				[]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0"})
		}()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logs.String(), `"msg":"serving"`) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if code := <-done; code != 0 || !strings.Contains(logs.String(), `"msg":"serving"`) {
			t.Errorf("%s: exit %d, log:\n%s", name, code, logs.String())
		}
	}
}

// TestFrontEndsAgreeCUDA: `mlwarden cuda check` runs the same pipeline as
// `mlwarden scan --checks cuda`: with the same config (a skipped directory,
// an ignore entry), host file and targets (one declaration each; an inline
// comment on one), every problem of a cuda check verdict is a finding of
// scan's, suppressed alike, and the skipped file is read by neither.
func TestFrontEndsAgreeCUDA(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Driver R550 runs CUDA 12.4, not 13.0.
	hostFile := write("pool.yaml", "driver_version: 550.54.15\ngpus: [{compute_capability: \"9.0\", brand: nvidia}]\n")
	cfg := write("mlwarden.yaml", "skip-dirs: [vendor]\nignore:\n  - rule: cuda/incompatible\n    path: requirements-legacy.txt\n    reason: runs on the R580 pool only\n")
	targets := []string{
		filepath.Dir(write("runs/requirements.txt", "torch==2.4.0+cu124\n")),
		filepath.Dir(write("inline/requirements.txt", "torch==2.9.0+cu130  # mlwarden:ignore cuda/incompatible\n")),
		filepath.Dir(write("ignored/requirements-legacy.txt", "torch==2.9.0+cu130\n")),
		filepath.Dir(write("fails/requirements.txt", "torch==2.9.0+cu130\n")),
	}
	write("runs/vendor/requirements.txt", "torch==2.9.0+cu130\n") // skipped: would make "runs" incompatible

	code, res := scanJSON(t, append([]string{"--checks", "cuda", "--host", hostFile, "--config", cfg}, targets...)...)
	if code != ExitFindings {
		t.Fatalf("scan: exit %d, errors %v", code, res.Errors)
	}
	ccode, out, errOut := run(t, "", append([]string{"cuda", "check", "--host", hostFile, "--config", cfg, "--format", "json"}, targets...)...)
	var rep struct {
		Results []struct {
			Target, Verdict string
			Reasons         []string
			Suppressed      []struct{ Rule, Reason, Why string }
		}
		Errors []scanners.Error
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("cuda check: exit %d: %v\n%s%s", ccode, err, out, errOut)
	}
	if ccode != code || len(rep.Errors) > 0 || len(rep.Results) != len(targets) {
		t.Fatalf("cuda check: exit %d (scan %d), %d results for %d targets, errors %v\n%s", ccode, code, len(rep.Results), len(targets), rep.Errors, out)
	}
	// What cuda check reports, as scan's findings would be seen.
	var got []string
	for _, r := range rep.Results {
		if r.Verdict != "incompatible" {
			continue
		}
		for _, why := range r.Reasons {
			sup := ""
			for _, s := range r.Suppressed {
				if s.Reason == why {
					sup = s.Why
				}
			}
			for _, f := range res.Findings {
				if f.Target == r.Target && strings.Contains(f.Message, why) {
					got = append(got, fmt.Sprintf("%s %s suppressed=%q", f.Target, f.RuleID, sup))
				}
			}
		}
	}
	var want []string
	for _, f := range res.Findings {
		want = append(want, fmt.Sprintf("%s %s suppressed=%q", f.Target, f.RuleID, f.Suppressed))
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(want) != 3 || !slices.Equal(got, want) {
		t.Errorf("cuda check's problems:\n%q\nscan's findings:\n%q\n%s", got, want, out)
	}
	if r := rep.Results[0]; r.Target != targets[0] || r.Verdict != "compatible" {
		t.Errorf("%s: %s, want compatible (its vendor/ is skipped)", r.Target, r.Verdict)
	}
	if n := res.Targets[0].Skipped; n != 1 {
		t.Errorf("scan skipped %d files of %s, want 1", n, targets[0])
	}
}
