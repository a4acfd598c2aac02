package cli

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestMaxMemory: --max-memory (default 1 GiB) is the process's soft memory
// limit; 0 lifts it. Error lines escape control characters from names.
func TestMaxMemory(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644)
	for _, c := range []struct {
		args []string
		want int64
	}{
		{nil, 1 << 30},
		{[]string{"--max-memory", "512MiB"}, 512 << 20},
		{[]string{"--max-memory", "0"}, math.MaxInt64},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		if code, _, stderr := run(t, "", append(append([]string{"scan", "--checks", "secrets"}, c.args...), dir)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("%v: memory limit %d, want %d", c.args, got, c.want)
		}
	}
	_, _, stderr := run(t, "", "scan", "--config", filepath.Join(dir, "no\x1b]0;pwned\x07such.yaml"), dir)
	if strings.Contains(stderr, "\x1b") || !strings.Contains(stderr, `\x1b]0;pwned\x07`) {
		t.Errorf("error line not escaped: %q", stderr)
	}
}
