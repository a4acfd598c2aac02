// Package slurm_test is the end-to-end test of the sbatch hook: real sbatch
// submissions to a real slurmctld that runs deploy/slurm/job_submit.lua.
// Start the cluster with `. .ci/slurm.sh` (as root); without it the test is
// skipped, or fails when CI=true.
package slurm_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/integration"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/catalog"
)

func needSlurm(t *testing.T) (bin string) {
	t.Helper()
	if os.Getenv("MLWARDEN_TEST_SLURM") == "" {
		integration.Skip(t, "a Slurm cluster", "MLWARDEN_TEST_SLURM is not set", "source .ci/slurm.sh start (as root)")
	}
	bin = os.Getenv("MLWARDEN_TEST_SLURM_BIN")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("MLWARDEN_TEST_SLURM_BIN: %v", err)
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		t.Fatal(err)
	}
	integration.Ran(t, "Slurm", os.Getenv("MLWARDEN_TEST_SLURM"))
	return bin
}

// fakeToken makes a format-valid Hugging Face token at run time, so that no
// credential sits in the repository.
func fakeToken() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	b := []byte("hf_")
	for range 34 {
		b = append(b, alnum[r.IntN(len(alnum))])
	}
	return string(b)
}

type submission struct {
	out, errOut string
	code        int
}

func sbatch(t *testing.T, dir, script string, env ...string) submission {
	t.Helper()
	f := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sbatch", f)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return submission{out: out.String(), errOut: errOut.String(), code: code}
}

// mlwardenLines is what `mlwarden sbatch` prints for script, as the hook runs it.
func mlwardenLines(t *testing.T, bin, script string, sbatchEnv ...string) string {
	t.Helper()
	args := []string{"sbatch", "--name", "job script"}
	for _, e := range sbatchEnv {
		args = append(args, "--sbatch-env", e)
	}
	args = append(args, "-")
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("mlwarden sbatch: want exit 1, got %v (%s)", err, out)
	}
	return strings.TrimRight(string(out), "\n")
}

// rejection is the exact message sbatch prints when the hook rejects a job:
// each of mlwarden's lines, then sbatch's own.
func rejection(lines string) string {
	var b strings.Builder
	for _, l := range strings.Split(lines, "\n") {
		b.WriteString("sbatch: error: " + l + "\n")
	}
	b.WriteString("sbatch: error: Batch job submission failed: Unspecified error\n")
	return b.String()
}

func TestSbatchHook(t *testing.T) {
	bin := needSlurm(t)
	t.Run("exec", func(t *testing.T) { hookCases(t, bin) }) // mlwarden-sbatch
	t.Run("exec without mlwarden-sbatch", func(t *testing.T) {
		setLua(t, map[string]string{"local MLWARDEN_SBATCH = \"": "local MLWARDEN_SBATCH = \"/nonexistent/mlwarden-sbatch\"\nlocal _ = \""})
		hookCases(t, bin)
	})
	t.Run("admin settings", func(t *testing.T) { adminCases(t) })
	t.Run("socket", func(t *testing.T) {
		served := serveChecker(t, bin)
		hookCases(t, bin)
		// The checker logs a check after it has answered: wait for the
		// last line rather than race it.
		n := served()
		for deadline := time.Now().Add(5 * time.Second); n < 6 && time.Now().Before(deadline); n = served() {
			time.Sleep(50 * time.Millisecond)
		}
		if n < 6 {
			t.Errorf("the checker served %d checks, want every submission's (job_submit.lua did not use the socket)", n)
		}
	})
}

// adminCases checks job_submit.lua's settings: exemptions, fail-closed and
// fail-open.
func adminCases(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/bash\n#SBATCH --time=1\n#SBATCH --hold\nexport HF_TOKEN=" + fakeToken() + "\ntrue\n"
	accepted := regexp.MustCompile(`^Submitted batch job \d+\n$`)

	t.Run("exempt account", func(t *testing.T) {
		setLua(t, map[string]string{"local EXEMPT_ACCOUNTS = {}\n": "local EXEMPT_ACCOUNTS = { [\"e2e-exempt\"] = true }\n"})
		s := sbatch(t, dir, script, "SBATCH_ACCOUNT=e2e-exempt")
		if s.code != 0 || !accepted.MatchString(s.out) {
			t.Errorf("exempt job not accepted: exit %d %q %q", s.code, s.out, s.errOut)
		}
		if s := sbatch(t, dir, script); s.code == 0 {
			t.Errorf("a job of another account was accepted: %q", s.out)
		}
	})
	t.Run("fail-closed", func(t *testing.T) {
		setLua(t, map[string]string{"local MLWARDEN = \"": "local MLWARDEN = \"/nonexistent/mlwarden\"\nlocal _ = \"",
			"local MLWARDEN_SBATCH = \"": "local MLWARDEN_SBATCH = \"/nonexistent/mlwarden-sbatch\"\nlocal _ = \""})
		s := sbatch(t, dir, "#!/bin/bash\n#SBATCH --hold\ntrue\n")
		want := "sbatch: error: mlwarden: mlwarden could not be started (/nonexistent/mlwarden); the job was not submitted. Ask your cluster admins.\n" +
			"sbatch: error: Batch job submission failed: Unspecified error\n"
		if s.code == 0 || s.errOut != want {
			t.Errorf("exit %d, sbatch printed\n%s\nwant\n%s", s.code, s.errOut, want)
		}
	})
	t.Run("fail-open", func(t *testing.T) {
		setLua(t, map[string]string{
			"local MLWARDEN = \"":                "local MLWARDEN = \"/nonexistent/mlwarden\"\nlocal _ = \"",
			"local MLWARDEN_SBATCH = \"":         "local MLWARDEN_SBATCH = \"/nonexistent/mlwarden-sbatch\"\nlocal _ = \"",
			"local ON_ERROR = \"fail-closed\"\n": "local ON_ERROR = \"fail-open\"\n",
		})
		s := sbatch(t, dir, "#!/bin/bash\n#SBATCH --hold\ntrue\n")
		if s.code != 0 || !accepted.MatchString(s.out) {
			t.Errorf("exit %d %q %q", s.code, s.out, s.errOut)
		}
	})
	exec.Command("scancel", "--quiet", "--state=PENDING").Run()
}

// serveChecker starts `mlwarden sbatch --serve` and points the cluster's
// job_submit.lua at it until the test ends. served counts the checks it
// answered.
func serveChecker(t *testing.T, bin string) (served func() int) {
	t.Helper()
	dir := os.Getenv("MLWARDEN_TEST_SLURM_DIR")
	sock := filepath.Join(dir, "sbatch.sock")
	var log syncBuffer
	cmd := exec.Command(bin, "sbatch", "--serve", sock)
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i > 100 {
			t.Fatalf("the checker did not start: %s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	setLua(t, map[string]string{"local SOCKET = nil\n": "local SOCKET = \"" + sock + "\"\n"})
	return func() int { return strings.Count(log.String(), "mlwarden: checked a script") }
}

// setLua rewrites lines of the cluster's job_submit.lua until the test ends.
func setLua(t *testing.T, lines map[string]string) {
	t.Helper()
	lua := filepath.Join(os.Getenv("MLWARDEN_TEST_SLURM_DIR"), "job_submit.lua")
	orig, err := os.ReadFile(lua)
	if err != nil {
		t.Fatal(err)
	}
	data := orig
	for old, repl := range lines {
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%s has no %q line", lua, old)
		}
		data = bytes.Replace(data, []byte(old), []byte(repl), 1)
	}
	write := func(data []byte) {
		if err := os.WriteFile(lua, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// slurmctld reloads job_submit.lua when its mtime (in seconds)
		// moves past the last one it loaded. An earlier test process on the
		// same cluster may have left a later mtime: start from the file's.
		if fi, err := os.Stat(lua); err == nil && fi.ModTime().After(luaLast) {
			luaLast = fi.ModTime()
		}
		luaMtime = time.Now().Add(2 * time.Second).Truncate(time.Second)
		if !luaMtime.After(luaLast) {
			luaMtime = luaLast.Add(2 * time.Second)
		}
		luaLast = luaMtime
		if err := os.Chtimes(lua, luaMtime, luaMtime); err != nil {
			t.Fatal(err)
		}
	}
	write(data)
	t.Cleanup(func() { write(orig) })
}

// luaLast is the last mtime given to job_submit.lua (the tests run one at a
// time).
var luaLast, luaMtime time.Time

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func hookCases(t *testing.T, bin string) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("clean job is accepted and runs", func(t *testing.T) {
		out := filepath.Join(dir, "clean.out")
		s := sbatch(t, dir, "#!/bin/bash\n#SBATCH --job-name=clean\n#SBATCH --time=1\n#SBATCH --output="+out+"\necho mlwarden-e2e-ok\n")
		if s.code != 0 || !regexp.MustCompile(`^Submitted batch job \d+\n$`).MatchString(s.out) || s.errOut != "" {
			t.Fatalf("sbatch: exit %d, stdout %q, stderr %q", s.code, s.out, s.errOut)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			data, _ := os.ReadFile(out)
			if strings.Contains(string(data), "mlwarden-e2e-ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job did not run within 60 s (output %q)", data)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	token := fakeToken()
	rules, err := catalog.Rules()
	if err != nil {
		t.Fatal(err)
	}
	rule := func(id string) scanners.Rule {
		for _, r := range rules {
			if r.ID == id {
				return r
			}
		}
		t.Fatalf("no rule %s", id)
		return scanners.Rule{}
	}

	rejected := []struct {
		name   string
		script string
		env    []string // the submitter's environment
		hook   []string // what job_submit.lua passes as --sbatch-env
		rule   string
		exact  string // the whole message when it is fixed here
	}{
		{
			name:   "token",
			script: "#!/bin/bash\n#SBATCH --time=1\nexport HF_TOKEN=" + token + "\npython train.py\n",
			rule:   "secrets/huggingface-token",
		},
		{
			name:   "latest image given to pyxis",
			script: "#!/bin/bash\n#SBATCH --time=1\nsrun python train.py\n",
			env:    []string{"_SLURM_SPANK_OPTION_pyxis_container_image=registry.example.com/nvidia/pytorch:latest"},
			hook:   []string{"_SLURM_SPANK_OPTION_pyxis_container_image=registry.example.com/nvidia/pytorch:latest"},
			rule:   "pins/image-latest",
		},
		{
			name:   "notebook open to the network",
			script: "#!/bin/bash\n#SBATCH --time=1\njupyter notebook --ip=0.0.0.0 --no-browser --NotebookApp.token=''\n",
			rule:   "misconfig/notebook-exposed",
		},
		{
			name:   "miner",
			script: "#!/bin/bash\n#SBATCH --time=1\n./xmrig -o stratum+tcp://pool.example.org:3333 -u wallet\n",
			rule:   "misconfig/crypto-miner",
		},
	}
	for _, tc := range rejected {
		t.Run(tc.name+" is rejected", func(t *testing.T) {
			s := sbatch(t, dir, tc.script, tc.env...)
			if s.code == 0 {
				t.Fatalf("sbatch accepted the job: %q", s.out)
			}
			want := rejection(mlwardenLines(t, bin, tc.script, tc.hook...))
			if s.errOut != want {
				t.Errorf("sbatch printed\n%s\nwant\n%s", s.errOut, want)
			}
			if !strings.Contains(s.errOut, "(rule "+tc.rule+")") {
				t.Errorf("no %s finding in %q", tc.rule, s.errOut)
			}
			if strings.Contains(s.errOut, token) {
				t.Error("the token appears whole in sbatch's output")
			}
		})
	}

	// The exact wording for the token, from the rule itself: line, title,
	// redacted evidence, fix.
	t.Run("token message", func(t *testing.T) {
		r := rule("secrets/huggingface-token")
		s := sbatch(t, dir, rejected[0].script)
		want := "sbatch: error: mlwarden: line 3: " + r.Title + " in '" + scanners.Redact(token) + "' — " + r.Fix + " (rule " + r.ID + ")\n" +
			"sbatch: error: Batch job submission failed: Unspecified error\n"
		if s.errOut != want {
			t.Errorf("sbatch printed\n%q\nwant\n%q", s.errOut, want)
		}
	})
}

// TestCliFilter runs cli_filter.lua inside the real sbatch: a script with a
// token is stopped on the submit host, a clean one goes on to the controller
// (here an address where nothing listens).
func TestCliFilter(t *testing.T) {
	bin := needSlurm(t)
	dir := t.TempDir()
	lua, err := os.ReadFile("cli_filter.lua")
	if err != nil {
		t.Fatal(err)
	}
	const unset = "local MLWARDEN = \"mlwarden\"\n"
	if !bytes.Contains(lua, []byte(unset)) {
		t.Fatalf("cli_filter.lua has no %q line", unset)
	}
	lua = bytes.Replace(lua, []byte(unset), []byte("local MLWARDEN = \""+bin+"\"\n"), 1)
	// mlwarden-sbatch when .ci/slurm.sh built it (it does), as on a submit
	// host with both installed.
	const lean = "local MLWARDEN_SBATCH = \"/usr/local/bin/mlwarden-sbatch\"\n"
	if !bytes.Contains(lua, []byte(lean)) {
		t.Fatalf("cli_filter.lua has no %q line", lean)
	}
	leanBin := os.Getenv("MLWARDEN_TEST_SLURM_SBATCH_BIN")
	if leanBin == "" {
		leanBin = "/nonexistent/mlwarden-sbatch"
	}
	lua = bytes.Replace(lua, []byte(lean), []byte("local MLWARDEN_SBATCH = \""+leanBin+"\"\n"), 1)
	if err := os.WriteFile(filepath.Join(dir, "cli_filter.lua"), lua, 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=cf\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\nMessageTimeout=1\n"+
		"CliFilterPlugins=lua\nNodeName=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\nPartitionName=debug Nodes=ALL Default=YES State=UP\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := "SLURM_CONF=" + conf

	token := fakeToken()
	bad := "#!/bin/bash\n#SBATCH --time=1\nexport HF_TOKEN=" + token + "\n"
	s := sbatch(t, dir, bad, env)
	want := mlwardenLines(t, bin, bad) + "\nmlwarden: the job was not submitted; fix the lines above and submit again.\nsbatch: error: cli_filter plugin terminated with error\n"
	// mlwarden names the script by its path here, not "job script".
	want = strings.ReplaceAll(want, "job script", filepath.Join(dir, "job.sh"))
	if s.code == 0 || s.errOut != want {
		t.Errorf("exit %d, sbatch printed\n%s\nwant\n%s", s.code, s.errOut, want)
	}
	if strings.Contains(s.errOut, token) {
		t.Error("the token appears whole")
	}

	s = sbatch(t, dir, "#!/bin/bash\n#SBATCH --time=1\nhostname\n", env)
	if !strings.Contains(s.errOut, "Unable to contact slurm controller") {
		t.Errorf("a clean script did not pass the filter: %q", s.errOut)
	}
}
