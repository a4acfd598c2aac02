package pins

import (
	"context"
	"errors"
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
