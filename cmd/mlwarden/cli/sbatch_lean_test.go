//go:build !mlwarden_sbatch

package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSbatchLeanBuild: the sbatch hook's binary (go build -tags
// mlwarden_sbatch ./cmd/mlwarden, released as mlwarden-sbatch) answers
// every script as `mlwarden sbatch` does — the same lines on standard
// output and error, the same exit code — and has only the sbatch and
// version commands. (One difference by design: it does not validate the
// signatures: and serve: sections of a shared config file, which it does
// not link the code of.)
func TestSbatchLeanBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no go tool to build mlwarden-sbatch with")
		}
		t.Skip("no go tool to build mlwarden-sbatch with")
	}
	dir := t.TempDir()
	lean := filepath.Join(dir, "mlwarden-sbatch")
	build := exec.Command(goTool, "build", "-tags", "mlwarden_sbatch", "-o", lean, "github.com/mlwarden/mlwarden/cmd/mlwarden")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags mlwarden_sbatch: %v\n%s", err, out)
	}
	write := func(name, script string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tok := sbatchToken()
	cases := []struct {
		name string
		args []string
		code int // what both must exit with
	}{
		{"demo", []string{filepath.Join(demo, "train.sbatch")}, 1},
		{"demo, medium", []string{"--fail-on", "medium", filepath.Join(demo, "train.sbatch")}, 1},
		{"token", []string{write("token.sbatch", "#!/bin/bash\n#SBATCH --time=10\nexport HF_TOKEN="+tok+"\nsrun python train.py\n")}, 1},
		{"latest image", []string{write("latest.sbatch", "#!/bin/bash\n#SBATCH --container-image=nvcr.io/nvidia/pytorch:latest\nsrun python train.py\n")}, 1},
		{"clean", []string{write("clean.sbatch", "#!/bin/bash\n#SBATCH --time=10\n#SBATCH --gres=gpu:1\nsrun python train.py --epochs 3\n")}, 0},
		{"clean, shown", []string{"--show", "info", write("clean2.sbatch", "#!/bin/bash\n#SBATCH --time=10\nsrun hostname\n")}, 0},
		{"image from the environment", []string{"--sbatch-env", "_SLURM_SPANK_OPTION_pyxis_container_image=ubuntu:latest", write("env.sbatch", "#!/bin/bash\nsrun true\n")}, 1},
		{"config with every section", []string{"--config", write("mlwarden.yaml", "fail-on: medium\nsignatures:\n  images:\n    - glob: \"registry.internal/**\"\n      authorities:\n        - key: cosign.pub\nserve:\n  fail-on: high\n  digest: deny\n"), filepath.Join(demo, "train.sbatch")}, 1},
		{"json", []string{"--format", "json", filepath.Join(demo, "train.sbatch")}, 1},
		{"sarif", []string{"--format", "sarif", "--fail-on", "medium", filepath.Join(demo, "train.sbatch")}, 1},
		{"missing file", []string{filepath.Join(dir, "nothing.sbatch")}, 2},
		{"bad flag", []string{"--fail-on", "bogus", filepath.Join(dir, "clean.sbatch")}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"sbatch"}, c.args...)
			code, out, errOut := run(t, "", args...)
			cmd := exec.Command(lean, args...)
			var lout, lerr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &lout, &lerr
			lcode := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				lcode = ee.ExitCode()
			}
			if code != c.code || lcode != code {
				t.Errorf("exit: mlwarden %d, mlwarden-sbatch %d, want %d", code, lcode, c.code)
			}
			if lout.String() != out || lerr.String() != errOut {
				t.Errorf("output differs:\nmlwarden:\n%s%s\nmlwarden-sbatch:\n%s%s", out, errOut, lout.String(), lerr.String())
			}
			if c.code == 1 && out == "" {
				t.Errorf("a rejected script printed nothing")
			}
		})
	}
	// Only the hook's commands; asking for a check it leaves out is an error.
	out, _ := exec.Command(lean, "scan", ".").CombinedOutput()
	if !strings.Contains(string(out), `unknown command "scan"`) {
		t.Errorf("mlwarden-sbatch scan: %s", out)
	}
	cmd := exec.Command(lean, "sbatch", "--checks", "signatures", filepath.Join(dir, "clean.sbatch"))
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not in this build") {
		t.Errorf("--checks signatures: %v %s", err, out)
	}
	// "all" is every check the hook links.
	if out, err := exec.Command(lean, "sbatch", "--checks", "all", filepath.Join(dir, "clean.sbatch")).CombinedOutput(); err != nil {
		t.Errorf("--checks all: %v %s", err, out)
	}
}

// TestSbatchLeanDeps: the sbatch hook's binary does not link what only
// other commands need — a package init the hook would pay on every
// submitted job (docs/design/sbatch-hook.md). A new import that brings one
// back fails here.
func TestSbatchLeanDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no go tool to list mlwarden-sbatch's packages with")
		}
		t.Skip("no go tool to list mlwarden-sbatch's packages with")
	}
	list := func(tags ...string) []string {
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.Command(goTool, append(args, "github.com/mlwarden/mlwarden/cmd/mlwarden")...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	lean, full := list("-tags", "mlwarden_sbatch"), list()
	// Packages left out: a path ending in / stands for every package under it.
	left := []string{
		"github.com/sigstore/",                             // cosign, rekor: the signatures check
		"github.com/mlwarden/mlwarden/scanners/signatures", //
		"github.com/mlwarden/mlwarden/server",              // the admission server (server/slurmhook stays)
		"k8s.io/",                                          // misconfig.Cluster's and the server's API types, client-go
		"github.com/prometheus/",                           // the server's metrics
		"google.golang.org/grpc/",                          //
		"github.com/redis/",                                // the result cache's Redis backend (4 MB of the binary)
		"github.com/mlwarden/mlwarden/scanners/cache",      // the result cache
		"github.com/mlwarden/mlwarden/scanners/source",     // targets by reference: paths, git (source/script stays)
		"github.com/mlwarden/mlwarden/scanners/source/image",
		"github.com/mlwarden/mlwarden/scanners/source/hf",
		"github.com/CycloneDX/",                   // report formats sbatch does not offer (reports/formats_sbatch.go)
		"encoding/gob",                            // (CycloneDX's)
		"github.com/google/go-containerregistry/", // pins' registry resolver for mlwarden pin (pins/rewrite.go)
		"github.com/opencontainers/go-digest",     // (go-containerregistry's)
		"github.com/moby/buildkit/",               // the Dockerfile parser (pins, misconfig: dockerfile.go)
		"google.golang.org/protobuf/",             // (BuildKit's errors)
		// gitleaks' detector and what it imports (secrets/internal/detector
		// runs the rules instead; gitleaks' config and codec stay).
		"github.com/zricethezav/gitleaks/v8/detect",
		"github.com/zricethezav/gitleaks/v8/report",
		"github.com/zricethezav/gitleaks/v8/sources",
		"github.com/mholt/archives",
		"github.com/h2non/filetype",
		"github.com/Masterminds/",
		// The xz, zstd and 7z decoders (internal/unpack) and what 7z's
		// brings (go4.org's readerutil with expvar).
		"github.com/ulikunitz/xz",
		"github.com/klauspost/compress/zstd",
		"github.com/bodgit/sevenzip",
		"expvar",
		// PEP 440 ordering by hand (rules/pep440.go), not the library
		// that compiles its patterns at init.
		"github.com/aquasecurity/go-pep440-version",
	}
	for _, want := range left {
		in := func(pkgs []string) []string {
			var out []string
			for _, p := range pkgs {
				if p == want || strings.HasSuffix(want, "/") && strings.HasPrefix(p, want) {
					out = append(out, p)
				}
			}
			return out
		}
		if got := in(lean); len(got) > 0 {
			t.Errorf("mlwarden-sbatch links %s (%d packages: %s…)", want, len(got), got[0])
		}
		if len(in(full)) == 0 {
			t.Errorf("mlwarden does not link %s: the test no longer shows the build tag leaving it out", want)
		}
	}
	if len(lean) >= len(full) {
		t.Errorf("mlwarden-sbatch links %d packages, mlwarden %d", len(lean), len(full))
	}
	t.Logf("mlwarden-sbatch links %d packages, mlwarden %d", len(lean), len(full))
}
