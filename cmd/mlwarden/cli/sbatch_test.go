package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/config"
	"github.com/mlwarden/mlwarden/server/slurmhook"
)

// sbatchToken is a format-valid Hugging Face token made at run time, so that
// none sits in the repository.
func sbatchToken() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(9, 9))
	b := []byte("hf_")
	for range 34 {
		b = append(b, alnum[r.IntN(len(alnum))])
	}
	return string(b)
}

func TestSbatchCommand(t *testing.T) {
	tok := sbatchToken()
	tests := []struct {
		name   string
		script string
		args   []string
		code   int
		want   []string // lines, exactly
	}{
		{name: "clean prints nothing", script: "#!/bin/bash\n#SBATCH --time=10\nsrun hostname\n", code: 0},
		{name: "token rejects", script: "#!/bin/bash\n#SBATCH --time=10\nexport HF_TOKEN=" + tok + "\n", code: 1,
			want: []string{"mlwarden: line 3: "}},
		{name: "medium findings allow, silently", script: "#!/bin/bash\ntrue\n#SBATCH --gres=gpu:8\n", code: 0},
		{name: "medium findings shown as warnings", script: "#!/bin/bash\ntrue\n#SBATCH --gres=gpu:8\n", args: []string{"--show", "medium"}, code: 0,
			want: []string{"mlwarden: warning: line 3: '#SBATCH --gres=gpu:8' is ignored by Slurm: it comes after the first command (line 2), and sbatch stops reading #SBATCH directives there, so the job runs without it — move it above the first command, unindented, spelled #SBATCH (or write ##SBATCH to disable it on purpose) (rule misconfig/sbatch-directive-ignored)"}},
		{name: "fail-on medium rejects", script: "#!/bin/bash\n#SBATCH --comment=run#5\ntrue\n", args: []string{"--fail-on", "medium"}, code: 1,
			want: []string{"mlwarden: line 2: '--comment=run#5' reaches Slurm as '--comment=run': an unescaped '#' starts a comment in an #SBATCH line — quote the value (--comment=\"run#5\") or escape the '#' as \\# (rule misconfig/sbatch-value-truncated)"}},
		{name: "command-line problem", script: "#!/bin/bash\ntrue\n", args: []string{"--fail-on", "medium", "--sbatch-args", "--time"}, code: 1,
			want: []string{"mlwarden: script: sbatch refuses this script: command line: option '--time' requires an argument — write --time=VALUE (rule misconfig/sbatch-invalid)"}},
		{name: "unknown option", script: "#!/bin/bash\n#SBATCH --site-opt=1\ntrue\n", args: []string{"--fail-on", "medium"}, code: 1,
			want: []string{"mlwarden: line 2: sbatch refuses this script: unrecognized option '--site-opt=1' — check the option's spelling"}},
		{name: "site SPANK option", script: "#!/bin/bash\n#SBATCH --site-opt=1\ntrue\n", args: []string{"--fail-on", "medium", "--spank-option", "site-opt="}, code: 0},
		{name: "bad usage", script: "", args: []string{"--fail-on", "bogus"}, code: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.script, append(append([]string{"sbatch"}, tc.args...), "-")...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			if strings.Contains(out, tok) || strings.Contains(errOut, tok) {
				t.Fatal("the token appears whole")
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if out == "" {
				lines = nil
			}
			if len(lines) != len(tc.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(tc.want), out)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], w)
				}
			}
		})
	}
}

// TestSbatchEffectiveOptions: an image given on the command line (or by the
// pyxis environment) is what is checked, and a script line it overrides is
// not blamed.
func TestSbatchEffectiveOptions(t *testing.T) {
	script := "#!/bin/bash\n#SBATCH --container-image=ubuntu:latest\nsrun true\n"
	pinned := "--container-image=ubuntu@sha256:" + strings.Repeat("ab", 32)
	code, out, errOut := run(t, script, "sbatch", "--format", "json", "--sbatch-args", pinned, "-")
	var res scanners.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s%s", code, err, out, errOut)
	}
	for _, f := range res.Findings {
		if f.Check == scanners.CheckPins && f.Suppressed == "" {
			t.Errorf("overridden image still reported: %+v", f)
		}
	}
	if code != 0 {
		t.Errorf("exit %d, want 0:\n%s", code, out)
	}

	code, out, _ = run(t, "#!/bin/bash\nsrun true\n", "sbatch", "--sbatch-env", "_SLURM_SPANK_OPTION_pyxis_container_image=ubuntu:latest", "-")
	if code != 1 || !strings.Contains(out, "mlwarden: option --container-image=ubuntu:latest (from _SLURM_SPANK_OPTION_pyxis_container_image): ") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestSbatchServe(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var out bytes.Buffer
		code := MainContext(ctx, BuildInfo{Version: "test"}, strings.NewReader(""), &out, &sbatchSyncWriter{}, []string{"sbatch", "--serve", sock})
		if code != 0 {
			done <- fmt.Errorf("serve exited %d: %s", code, out.String())
			return
		}
		done <- nil
	}()
	defer func() {
		cancel()
		<-done
		if _, err := os.Stat(sock); err == nil {
			t.Error("socket left behind")
		}
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i > 200 {
			t.Fatal("the checker did not start")
		}
		time.Sleep(25 * time.Millisecond)
	}
	// The same answer through the socket as in-process.
	script := "#!/bin/bash\nexport HF_TOKEN=" + sbatchToken() + "\n"
	code, out, _ := run(t, script, "sbatch", "--connect", sock, "-")
	wantCode, wantOut, _ := run(t, script, "sbatch", "-")
	if wantCode != 1 {
		t.Fatalf("in-process: exit %d, want 1", wantCode)
	}
	if code != wantCode || out != wantOut {
		t.Errorf("through the socket: exit %d %q; in-process: exit %d %q", code, out, wantCode, wantOut)
	}
	// A bad request is answered, not dropped.
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("5:bogus,1:x,"))
	line, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if line != "exit 2\n" {
		t.Errorf("bad request answered %q", line)
	}
	// Nothing listening: checked in-process.
	code, out, _ = run(t, script, "sbatch", "--connect", sock+".none", "-")
	if code != wantCode || out != wantOut {
		t.Errorf("fallback: exit %d %q", code, out)
	}
}

// sbatchSyncWriter is a buffer the checker's goroutines may write at once.
type sbatchSyncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *sbatchSyncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// BenchmarkSbatchCheck is one check as the checker (--serve) answers it, on
// the 60-line script of deploy/slurm/latency.sh.
func BenchmarkSbatchCheck(b *testing.B) {
	data, err := os.ReadFile("../../../deploy/slurm/latency.sh")
	if err != nil {
		b.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), "cat <<'EOF'\n")
	script, _, _ := strings.Cut(rest, "\nEOF\n")
	a := &app{build: BuildInfo{Version: "bench"}, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	v, err := config.Resolve("sbatch", nil, func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, err := a.sbatchChecker(v, false)
	if err != nil {
		b.Fatal(err)
	}
	req := slurmhook.Request{Name: "job script", Script: []byte(script + "\n"),
		Env: []string{"_SLURM_SPANK_OPTION_pyxis_container_image=registry.example.com/nvidia/pytorch:24.01-py3"}}
	b.ResetTimer()
	for b.Loop() {
		var out bytes.Buffer
		if code := c.Check(context.Background(), req, &out); code == ExitError {
			b.Fatal(out.String())
		}
	}
}

func (w *sbatchSyncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
