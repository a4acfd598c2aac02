//go:build mlwarden_sbatch

package pins

import (
	"strings"
	"testing"
)

// hookBuild: the tests run on mlwarden-sbatch's build (-tags
// mlwarden_sbatch), which reads no Dockerfile (dockerfile_sbatch.go).
const hookBuild = true

// TestHookDockerfile: the hook's build says a Dockerfile was not checked,
// once, instead of passing it.
func TestHookDockerfile(t *testing.T) {
	got, fs := scanText(t, "Dockerfile", "FROM ubuntu:latest\nRUN pip install torch\n")
	if len(got) != 1 || got[0] != "unparsed@0" || !strings.Contains(fs[0].Message, "not checked") {
		t.Fatalf("got %v", got)
	}
}
