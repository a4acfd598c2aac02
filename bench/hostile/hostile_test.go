// Package hostile runs the crafted inputs of issue 15 through the real
// mlwarden binary, one process each, and checks what a user would see: the
// exit code, that nothing crashed (a fatal runtime error also exits 2), the
// peak resident memory against the documented --max-memory ceiling, the
// time, and the finding that must be there. The inputs are generated at test
// time by internal/hostile.
//
//	go test ./bench/hostile                    # every case
//	MLWARDEN_HOSTILE_DIR=/tmp/h go test -run TestWrite ./bench/hostile   # write the inputs, for measuring another build
package hostile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

// ceiling is the default --max-memory: no input may take the process past it.
const ceiling = 1 << 30

// A case is one crafted input and what must happen.
type hcase struct {
	name  string
	files map[string][]byte // relative path → content; "@sparse:N" content makes a sparse file of N bytes ending in the rest
	args  []string          // after the binary; {dir} is the case's directory
	exit  int
	want  string // in stdout (the text report) or stderr
	not   string // never in the output
}

func cases(t testing.TB, root string) []hcase {
	tok := hostile.Token(15)
	canary := filepath.Join(root, "canary-outside", "shadow")
	os.MkdirAll(filepath.Dir(canary), 0o755)
	canaryTok := hostile.Token(16)
	if err := os.WriteFile(canary, []byte("HF_TOKEN="+canaryTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h5 := append(append([]byte{}, hostile.H5Magic...), fmt.Appendf(nil, "@sparse:%d:", 300<<20)...)
	h5 = append(h5, hostile.H5Tail()...)
	return []hcase{
		{"7z-2^28-files", map[string][]byte{"x.7z": hostile.SevenZipFiles(1 << 28)}, []string{"scan", "--checks", "models", "{dir}"}, 2, "more than the member limit", ""},
		{"7z-30GB-properties", map[string][]byte{"x.7z": hostile.SevenZipProps(30 << 30)}, []string{"scan", "--checks", "models", "{dir}"}, 1, "7z archive cannot be opened", ""},
		{"7z-encoded-2^28-files", map[string][]byte{"x.7z": hostile.SevenZipEncoded(1 << 28)}, []string{"scan", "--checks", "models", "{dir}"}, 2, "more than the member limit", ""},
		{"lzma-2GB-dictionary", map[string][]byte{"x.pkl.lzma": hostile.LzmaDict(1 << 31)}, []string{"scan", "--checks", "models", "{dir}"}, 2, "dictionary", ""},
		{"xz-3GB-dictionary", map[string][]byte{"x.pkl.xz": hostile.XzDict(39)}, []string{"scan", "--checks", "models", "{dir}"}, 2, "dictionary", ""},
		{"safetensors-95MB-header", map[string][]byte{"m.safetensors": hostile.Safetensors(95 << 20)}, []string{"scan", "--checks", "models", "{dir}"}, 2, "header entries", ""},
		{"safetensors-10MB-header", map[string][]byte{"m.safetensors": hostile.Safetensors(10 << 20)}, []string{"scan", "--checks", "models", "{dir}"}, 1, "more models/safetensors-malformed findings", ""},
		{"pickle-36M-nested-marks", map[string][]byte{"x.pkl": hostile.NestedPickle(36_000_000)}, []string{"scan", "--checks", "models", "{dir}"}, 1, "posix.system", ""},
		{"pickle-252MB-memo", map[string][]byte{"x.pkl": hostile.MemoPickle(252 << 20)}, []string{"scan", "--checks", "models", "{dir}"}, 1, "memo larger than", ""},
		{"zip-nested-16^5", map[string][]byte{"x.zip": hostile.NestedZip(16, 5)}, []string{"scan", "--checks", "models", "{dir}"}, 2, "nested deeper than 4", ""},
		{"zip-150k-entries", map[string][]byte{"x.zip": hostile.ManyEntriesZip(150_000)}, []string{"scan", "--checks", "models", "{dir}"}, 2, "more than 100000 entries", ""},
		{"zip-undecompressable-member", map[string][]byte{"x.pt": hostile.CorruptMemberZip()}, []string{"scan", "--checks", "models", "{dir}"}, 1, "cannot be decompressed", ""},
		{"npy-truncated-v2-header", map[string][]byte{"x.npy": hostile.NpyTruncated()}, []string{"scan", "--checks", "models", "{dir}"}, 1, "truncated inside its header", ""},
		{"h5-lambda-after-256MiB", map[string][]byte{"model.h5": h5}, []string{"scan", "--checks", "models", "{dir}"}, 1, "late_lambda", ""},
		{"tf-pyfunc-after-70k-nodes", map[string][]byte{"saved_model.pb": hostile.SavedModel(70_000)}, []string{"scan", "--checks", "models", "{dir}"}, 1, "op PyFunc", ""},
		{"tar-climbing-names-and-link", map[string][]byte{"x.tar": hostile.ClimbingTar(canary)}, []string{"scan", "{dir}"}, 1, "is a link to", canaryTok},
		{"zip-climbing-names-and-link", map[string][]byte{"x.zip": hostile.ClimbingZip(canary)}, []string{"scan", "{dir}"}, 1, "zip slip", canaryTok},
		{"shell-200k-nested-subst", map[string][]byte{"job.sh": hostile.DeepShell(200_000)}, []string{"scan", "{dir}"}, 0, "nest", ""},
		{"sbatch-200k-nested-subst", map[string][]byte{"job.sh": hostile.DeepShell(200_000)}, []string{"sbatch", "--fail-on", "none", "{dir}/job.sh"}, 0, "", "goroutine"},
		{"sbatch-NUL-before-token", map[string][]byte{"job.sh": hostile.NULScript(tok)}, []string{"sbatch", "{dir}/job.sh"}, 1, "Hugging Face", ""},
		{"scan-NUL-before-token", map[string][]byte{"job.sh": hostile.NULScript(tok)}, []string{"scan", "--checks", "secrets", "{dir}"}, 1, "Hugging Face", ""},
		{"secret-on-10MB-line", map[string][]byte{"data.json": hostile.LongLine(10<<20, tok)}, []string{"scan", "--checks", "secrets", "{dir}"}, 1, "Hugging Face", ""},
		{"secret-in-binary-strings", map[string][]byte{"tool": append(append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 8192)...), []byte("HF_TOKEN="+tok+"\x00\x00")...)}, []string{"scan", "--checks", "secrets", "{dir}"}, 1, "printable string", ""},
		{"output-injection-file-name", map[string][]byte{hostile.InjectionName: []byte("export HF_TOKEN=" + tok + "\n")}, []string{"scan", "--checks", "secrets", "{dir}"}, 1, `\x1b]0;pwned\x07`, "\x1b]0;"},
	}
}

// write puts a case's files under dir.
func write(t testing.TB, dir string, c hcase) {
	for name, data := range c.files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(data, []byte("@sparse:")); i >= 0 {
			var n int64
			rest := data[i+len("@sparse:"):]
			j := bytes.IndexByte(rest, ':')
			fmt.Sscan(string(rest[:j]), &n)
			tail := rest[j+1:]
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(data[:i])
			f.Truncate(n)
			f.WriteAt(tail, n-int64(len(tail)))
			f.Close()
			continue
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWrite writes every case's input under MLWARDEN_HOSTILE_DIR/<case>/,
// for measuring a build by hand (/usr/bin/time -v mlwarden scan …).
func TestWrite(t *testing.T) {
	root := os.Getenv("MLWARDEN_HOSTILE_DIR")
	if root == "" {
		t.Skip("set MLWARDEN_HOSTILE_DIR to write the crafted inputs")
	}
	for _, c := range cases(t, root) {
		write(t, filepath.Join(root, c.name), c)
		fmt.Printf("%s\t%s\n", c.name, strings.Join(c.args, " "))
	}
}

// TestHostileInputs runs every case through the built binary.
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mlwarden and runs about 25 processes on inputs up to 250 MB")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "mlwarden")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/mlwarden")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, c := range cases(t, tmp) {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(tmp, c.name)
			write(t, dir, c)
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.ReplaceAll(a, "{dir}", dir)
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			start := time.Now()
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The peak resident memory, polled from /proc while it runs (a
			// child's rusage maxrss starts from this test process's own peak).
			peak := make(chan int64, 1)
			stop := make(chan struct{})
			go func() {
				var hwm int64
				for {
					if v := vmHWM(cmd.Process.Pid); v > hwm {
						hwm = v
					}
					select {
					case <-stop:
						peak <- hwm
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(3 * time.Minute):
				cmd.Process.Kill()
				<-done
				close(stop)
				t.Fatalf("still running after 3 minutes")
			}
			close(stop)
			wall := time.Since(start)
			rss := <-peak
			code := cmd.ProcessState.ExitCode()
			out := stdout.String() + stderr.String()
			t.Logf("exit %d, %.2fs, peak RSS %d MiB", code, wall.Seconds(), rss>>20)
			for _, crash := range []string{"fatal error:", "panic:", "goroutine ", "internal error (panic)", "out of memory"} {
				if strings.Contains(out, crash) {
					t.Fatalf("crashed (%q):\n%s", crash, tail(out))
				}
			}
			if code != c.exit {
				t.Errorf("exit %d, want %d:\n%s", code, c.exit, tail(out))
			}
			if c.want != "" && !strings.Contains(out, c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, tail(out))
			}
			if c.not != "" && strings.Contains(out, c.not) {
				t.Errorf("output holds %q:\n%s", c.not, tail(out))
			}
			if rss > ceiling {
				t.Errorf("peak RSS %d MiB, over the %d MiB ceiling", rss>>20, ceiling>>20)
			}
		})
	}
}

// vmHWM returns a process's peak resident memory in bytes, or 0.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}
