package scan

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoCommandLineBelowCmd keeps the layering: only cmd/ parses flags.
// No package of the module outside cmd/ imports cobra or pflag (cosign's
// library brings cobra in transitively, through rekor and relic: that is
// theirs, and outside our reach).
func TestNoCommandLineBelowCmd(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/mlwarden/mlwarden/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if strings.HasPrefix(pkg, "github.com/mlwarden/mlwarden/cmd/") {
			continue
		}
		n++
		for _, imp := range strings.Fields(imports) {
			if imp == "github.com/spf13/cobra" || imp == "github.com/spf13/pflag" {
				t.Errorf("%s imports %s: only cmd/ parses the command line", pkg, imp)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d packages listed", n)
	}
}
