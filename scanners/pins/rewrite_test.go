//go:build !mlwarden_sbatch

package pins

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/registrytest"
)

func TestRewrite(t *testing.T) {
	host := registrytest.InProcess(t)
	d := registrytest.PushRandom(t, host+"/ml/pytorch:24.01", host+"/ml/base:1", host+"/ml/tool:2")
	testRewrite(t, host, d.String())
}

// TestRewriteRealRegistry runs the same against the registry that
// .ci/registry.sh starts (MLWARDEN_TEST_REGISTRY=127.0.0.1:PORT).
func TestRewriteRealRegistry(t *testing.T) {
	host := registrytest.Registry(t)
	d := registrytest.PushRandom(t, host+"/ml/pytorch:24.01", host+"/ml/base:1", host+"/ml/tool:2")
	testRewrite(t, host, d.String())
}

func testRewrite(t *testing.T, host, d string) {
	H := host
	cases := []struct{ name, file, in, want string }{
		{"dockerfile", "Dockerfile",
			"# syntax=docker/dockerfile:1\nARG BASE=" + H + "/ml/base:1\nFROM ${BASE} AS build\nRUN echo hi   # keep me\nFROM --platform=linux/amd64 " + H + "/ml/pytorch:24.01 AS final\nCOPY --from=build /a /a\nCOPY --from=" + H + "/ml/tool:2 /t /t\nFROM scratch\n",
			"# syntax=docker/dockerfile:1\nARG BASE=" + H + "/ml/base:1@" + d + "\nFROM ${BASE} AS build\nRUN echo hi   # keep me\nFROM --platform=linux/amd64 " + H + "/ml/pytorch:24.01@" + d + " AS final\nCOPY --from=build /a /a\nCOPY --from=" + H + "/ml/tool:2@" + d + " /t /t\nFROM scratch\n"},
		{"already pinned untouched", "Dockerfile", "FROM " + H + "/ml/base:1@" + d + "\n", "FROM " + H + "/ml/base:1@" + d + "\n"},
		{"kubernetes", "k8s/job.yaml",
			"apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n        - name: a # comment\n          image: \"" + H + "/ml/pytorch:24.01\"   # quoted\n        - name: b\n          image: &i " + H + "/ml/base:1\n      initContainers:\n        - {name: c, image: *i}\n",
			"apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n        - name: a # comment\n          image: \"" + H + "/ml/pytorch:24.01@" + d + "\"   # quoted\n        - name: b\n          image: &i " + H + "/ml/base:1@" + d + "\n      initContainers:\n        - {name: c, image: *i}\n"},
		{"sbatch", "train.sbatch",
			"#!/bin/bash\n#SBATCH --container-image=\"" + H + "#ml/pytorch:24.01\"\nIMG=" + H + "#ml/base:1\nsrun --container-image \"$IMG\" python t.py\nsrun --container-image=" + H + "#ml/tool:2 \\\n  true\napptainer pull docker://" + H + "/ml/base:1\n",
			"#!/bin/bash\n#SBATCH --container-image=\"" + H + "#ml/pytorch@" + d + "\"\nIMG=" + H + "#ml/base@" + d + "\nsrun --container-image \"$IMG\" python t.py\nsrun --container-image=" + H + "#ml/tool@" + d + " \\\n  true\napptainer pull docker://" + H + "/ml/base@" + d + "\n"},
		{"sbatch: variable defaults", "job.sbatch",
			"#!/bin/bash\nIMG=${IMG:-" + H + "#ml/base:1}\n: \"${J:=" + H + "#ml/tool:2}\"\nsrun --container-image=\"$IMG\" true\nsrun --container-image \"${K:-" + H + "#ml/pytorch:24.01}\" true\nsrun --container-image=\"$J\" true\n",
			"#!/bin/bash\nIMG=${IMG:-" + H + "#ml/base@" + d + "}\n: \"${J:=" + H + "#ml/tool@" + d + "}\"\nsrun --container-image=\"$IMG\" true\nsrun --container-image \"${K:-" + H + "#ml/pytorch@" + d + "}\" true\nsrun --container-image=\"$J\" true\n"},
		{"sbatch: the part before an unescaped '#'", "job.sbatch",
			"#!/bin/bash\n#SBATCH -J x --container-image '" + H + "#ml/base:1'#old\n#SBATCH -N1\nsrun true\n",
			"#!/bin/bash\n#SBATCH -J x --container-image '" + H + "#ml/base@" + d + "'#old\n#SBATCH -N1\nsrun true\n"},
		{"helm values: whole references only", "chart/values.yaml",
			"proxyImage: " + H + "/ml/tool:2\nimage:\n  repository: " + H + "/ml/base\n  tag: \"1\"\n",
			"proxyImage: " + H + "/ml/tool:2@" + d + "\nimage:\n  repository: " + H + "/ml/base\n  tag: \"1\"\n"},
		{"workflow", ".github/workflows/ci.yml",
			"jobs:\n  a:\n    container: " + H + "/ml/base:1\n    steps:\n      - uses: docker://" + H + "/ml/tool:2\n",
			"jobs:\n  a:\n    container: " + H + "/ml/base:1@" + d + "\n    steps:\n      - uses: docker://" + H + "/ml/tool:2@" + d + "\n"},
	}
	resolve := RegistryResolver()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Rewrite(context.Background(), c.file, []byte(c.in), resolve)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Data); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s\ndiff:\n%s", got, c.want, UnifiedDiff(c.file, []byte(c.want), res.Data))
			}
			// Pinning twice changes nothing more.
			again, err := Rewrite(context.Background(), c.file, res.Data, resolve)
			if err != nil || string(again.Data) != string(res.Data) || len(again.Edits) != 0 {
				t.Errorf("second pass changed the file: %v %v", again.Edits, err)
			}
		})
	}
	// What Slurm never reads is left alone, and Skipped says why.
	for _, c := range []struct{ name, in, ref, reason string }{
		{"cut to a registry host", "#!/bin/bash\n#SBATCH --container-image=" + H + "#ml/pytorch:24.01\nsrun true\n",
			H + "#ml/pytorch:24.01", "Slurm receives only \"" + H + "\""},
		{"escaped hash", "#!/bin/bash\n#SBATCH --container-image=" + H + "\\#ml/pytorch:24.01\nsrun true\n",
			H + "#ml/pytorch:24.01", "cannot be rewritten in place"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Rewrite(context.Background(), "train.sbatch", []byte(c.in), resolve)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Data) != c.in || len(res.Edits) != 0 {
				t.Errorf("rewritten: %+v\n%s", res.Edits, res.Data)
			}
			if len(res.Skipped) != 1 || res.Skipped[0].Line != 2 || res.Skipped[0].Ref != c.ref || !strings.Contains(res.Skipped[0].Reason, c.reason) {
				t.Errorf("skipped = %+v, want line 2, %q, a reason with %q", res.Skipped, c.ref, c.reason)
			}
		})
	}
	// A tag the registry does not have is an error, and the rest still pins.
	res, err := Rewrite(context.Background(), "Dockerfile", []byte("FROM "+H+"/ml/none:1\nFROM "+H+"/ml/base:1\n"), resolve)
	if err == nil || !strings.Contains(err.Error(), "ml/none:1") {
		t.Errorf("missing tag: err = %v", err)
	}
	if res == nil || len(res.Edits) != 1 {
		t.Errorf("missing tag: edits = %+v", res)
	}
}

func TestRewriteRefusesPlainHTTP(t *testing.T) {
	// 10.0.0.1 is a private address go-containerregistry would reach over
	// HTTP; without --insecure-registry the guard refuses before dialing.
	_, err := RegistryResolver()(context.Background(), "10.255.255.1:5000/x:1")
	if err == nil || !strings.Contains(err.Error(), "refusing plain HTTP") {
		t.Errorf("err = %v", err)
	}
}

func TestRewriteNotRewritable(t *testing.T) {
	_, err := Rewrite(context.Background(), "notes.md", []byte("FROM x"), nil)
	if !errors.Is(err, ErrNotRewritable) {
		t.Errorf("err = %v", err)
	}
}

func TestUnifiedDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	nw := strings.Replace(old, "b\n", "B\n", 1)
	want := "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n"
	if got := UnifiedDiff("f", []byte(old), []byte(nw)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// fakeGitHub answers GET /repos/OWNER/REPO/commits/REF as GitHub's API does
// with the sha media type, from refs ("owner/repo@ref" -> sha).
func fakeGitHub(t *testing.T, refs map[string]string) (string, *int) {
	t.Helper()
	calls := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*calls++
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/repos/"), "/")
		if len(parts) != 4 || parts[2] != "commits" || r.Header.Get("Accept") != "application/vnd.github.sha" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		sha, ok := refs[parts[0]+"/"+parts[1]+"@"+parts[3]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, sha)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

func TestRewriteActions(t *testing.T) {
	sha1 := strings.Repeat("a", 40)
	sha2 := strings.Repeat("b", 40)
	api, calls := fakeGitHub(t, map[string]string{"actions/checkout@v4": sha1, "org/repo@v1": sha2})
	in := "jobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - uses: \"actions/checkout@v4\"   # keep\n      - uses: actions/setup-go@" + commit + " # v5\n      - uses: ./local\n  b:\n    uses: org/repo/.github/workflows/w.yml@v1\n"
	want := "jobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@" + sha1 + " # v4\n      - uses: \"actions/checkout@" + sha1 + "\"   # keep\n      - uses: actions/setup-go@" + commit + " # v5\n      - uses: ./local\n  b:\n    uses: org/repo/.github/workflows/w.yml@" + sha2 + " # v1\n"
	res, err := Rewrite(context.Background(), ".github/workflows/ci.yml", []byte(in), nil, WithActions(GitHubResolver(WithGitHubAPI(api))))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data) != want {
		t.Errorf("got:\n%s\nwant:\n%s", res.Data, want)
	}
	if len(res.Edits) != 3 || *calls != 2 {
		t.Errorf("edits %v, %d API calls (want 3 edits, 2 calls: one per ref)", res.Edits, *calls)
	}
	// The result scans clean for actions.
	got, _ := scanText(t, ".github/workflows/ci.yml", string(res.Data))
	if len(got) != 0 {
		t.Errorf("pinned workflow still has findings %v", got)
	}

	// Offline: left alone, with the reason.
	res, err = Rewrite(context.Background(), ".github/workflows/ci.yml", []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data) != in || len(res.Skipped) != 3 || !strings.Contains(res.Skipped[0].Reason, "cannot resolve offline") {
		t.Errorf("offline: data changed or skipped %+v", res.Skipped)
	}

	// An unknown ref is an error naming the line; the others are pinned.
	bad := "steps:\n  - uses: actions/checkout@v4\n  - uses: actions/checkout@nope\n"
	res, err = Rewrite(context.Background(), ".github/workflows/x.yml", []byte(bad), nil, WithActions(GitHubResolver(WithGitHubAPI(api))))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(string(res.Data), sha1) {
		t.Errorf("unknown ref: err %v, data %s", err, res.Data)
	}

	// A block scalar is left alone, with the reason.
	block := "steps:\n  - uses: |\n      actions/checkout@v4\n"
	res, err = Rewrite(context.Background(), ".github/workflows/x.yml", []byte(block), nil, WithActions(GitHubResolver(WithGitHubAPI(api))))
	if err != nil || len(res.Skipped) != 1 || string(res.Data) != block {
		t.Errorf("block scalar: %v %+v", err, res.Skipped)
	}
}

func TestRewriteScriptImagesOffline(t *testing.T) {
	in := "#!/bin/bash\n#SBATCH --container-image=\"nvcr.io#nvidia/pytorch:24.01-py3\"\nIMG=${IMG:-nvcr.io/nvidia/nemo:24.05}\n: \"${J:=ubuntu:22.04}\"\nsrun --container-image=\"$IMG\" true\napptainer exec docker://$J true\n"
	res, err := Rewrite(context.Background(), "job.sbatch", []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, s := range res.Skipped {
		if !strings.Contains(s.Reason, "cannot resolve offline") {
			t.Errorf("reason %q", s.Reason)
		}
		lines = append(lines, s.Line)
	}
	if string(res.Data) != in || len(lines) != 3 {
		t.Errorf("skipped lines %v, want the directive and both defaults", lines)
	}
}
