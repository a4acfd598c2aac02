package scan

import (
	"testing"

	"github.com/mlwarden/mlwarden/scanners/slurm"
)

func TestQuoteDirective(t *testing.T) {
	for in, want := range map[string]string{
		"--time=10":                  "--time=10",
		"--container-image=a#b":      `--container-image="a#b"`,
		`--comment=say "hi" \ there`: `--comment="say \"hi\" \\ there"`,
	} {
		got := quoteDirective(in)
		if got != want {
			t.Errorf("quoteDirective(%q) = %q, want %q", in, got, want)
		}
		// sbatch reads it back as written.
		s := slurm.Parse([]byte("#!/bin/sh\n#SBATCH " + got + "\n"))
		if len(s.Directives) != 1 || len(s.Directives[0].Words) != 1 || s.Directives[0].Words[0] != in {
			t.Errorf("%q reads back as %+v", got, s.Directives)
		}
	}
}
