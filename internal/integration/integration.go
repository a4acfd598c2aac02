// Package integration says which integration tests ran against a real
// service and which skipped for want of one, in a form that reaches the
// person running `go test ./...`.
//
// In package-list mode go test prints nothing but "ok" for a passing
// package: a skip message, or anything the test binary writes, is hidden.
// So, when the test binary's parent is the go command and -v is not set,
// the lines go to the go command's own standard error (/proc/PPID/fd/2 on
// Linux), where they appear among its "ok" lines; otherwise (with -v, or
// where that is not possible) to the test binary's standard error.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// CI reports whether the tests run in CI (CI=true), where a missing service
// fails the tests that need it instead of skipping them.
func CI() bool { return os.Getenv("CI") == "true" }

// Ran notes that t runs against service, found at where.
func Ran(t testing.TB, service, where string) {
	t.Helper()
	say("integration: ran   %s against %s at %s", t.Name(), service, where)
}

// Skip skips t because service is missing (why), saying how to start it;
// under CI=true it fails t instead: CI must provide every service.
func Skip(t testing.TB, service, why, start string) {
	t.Helper()
	if CI() {
		t.Fatalf("CI=true but %s is missing: %s; the CI job must start it (%s)", service, why, start)
	}
	say("integration: SKIP  %s: needs %s (%s); to run it: %s", t.Name(), service, why, start)
	t.Skipf("integration test skipped: needs %s (%s); to run it: %s", service, why, start)
}

var (
	mu  sync.Mutex
	out *os.File
)

func say(format string, args ...any) {
	mu.Lock()
	defer mu.Unlock()
	if out == nil {
		out = sink()
	}
	// One write per line: lines of parallel test binaries do not mix.
	fmt.Fprintf(out, format+"\n", args...)
}

// sink is where the lines go: the go command's standard error when it runs
// this test binary in package-list mode, else ours.
func sink() *os.File {
	if testing.Verbose() {
		return os.Stderr
	}
	ppid := strconv.Itoa(os.Getppid())
	exe, err := os.Readlink(filepath.Join("/proc", ppid, "exe"))
	if err != nil || filepath.Base(exe) != "go" {
		return os.Stderr
	}
	f, err := os.OpenFile(filepath.Join("/proc", ppid, "fd", "2"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return os.Stderr
	}
	return f
}
