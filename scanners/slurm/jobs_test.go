package slurm

import (
	"context"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mlwarden/mlwarden/internal/hostile"
	"github.com/mlwarden/mlwarden/scanners"
)

// TestJobsInHeredocs: a job script submitted through a here-document
// (sbatch <<EOF, cat <<EOF | sbatch) is a batch script: its directives are
// read as sbatch reads them, at the lines of the enclosing file, with the
// submitting shell's expansions when the delimiter is unquoted.
func TestJobsInHeredocs(t *testing.T) {
	const cut = "registry.example.com#nvidia/pytorch:24.01-py3"
	tests := []struct {
		name, script string
		want         []string // rule@line
	}{
		{name: "value cut by '#'", script: "#!/bin/bash\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --container-image=" + cut + "\nsrun true\nEOF\n",
			want: []string{"misconfig/sbatch-value-truncated@4"}},
		{name: "directive after the job's first command", script: "#!/bin/bash\nset -e\nsbatch --parsable -p gpu <<'EOF'\n#!/bin/bash\n#SBATCH -N2\nmodule load cuda/12.4\n#SBATCH --gres=gpu:8\nsrun true\nEOF\n",
			want: []string{"misconfig/sbatch-directive-ignored@7"}},
		{name: "unquoted delimiter: the outer variable is expanded", script: "#!/bin/bash\nIMG='" + cut + "'\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --container-image=$IMG\nsrun true\nEOF\n",
			want: []string{"misconfig/sbatch-value-truncated@5"}},
		{name: "quoted delimiter: literal", script: "#!/bin/bash\nIMG='" + cut + "'\nsbatch <<'EOF'\n#!/bin/bash\n#SBATCH --container-image=$IMG\nsrun true\nEOF\n"},
		{name: "escaped dollar: literal", script: "#!/bin/bash\nIMG='" + cut + "'\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --container-image=\\$IMG\nsrun true\nEOF\n"},
		{name: "cat into sbatch", script: "#!/bin/bash\ncat <<EOF | sbatch --job-name x\n#!/bin/bash\n#SBATCH --mail-type=BEGIN, END\nsrun true\nEOF\n",
			want: []string{"misconfig/sbatch-invalid@4"}},
		{name: "no #! line", script: "#!/bin/bash\nfor i in 1 2; do\n  sbatch <<EOF\nsrun true\nEOF\ndone\n",
			want: []string{"misconfig/sbatch-invalid@4"}},
		{name: "a script operand is the job, not the here-document", script: "#!/bin/bash\nsbatch job.sh <<EOF\n#!/bin/bash\n#SBATCH --container-image=" + cut + "\nEOF\n"},
		{name: "a here-document written to a file is not submitted", script: "#!/bin/bash\ncat > next.sbatch <<EOF\n#!/bin/bash\n#SBATCH --container-image=" + cut + "\nEOF\nsbatch next.sbatch\n"},
		{name: "clean job", script: "#!/bin/bash\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --time=10\nsrun true\nEOF\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := scanners.ScanBytes(context.Background(), New(), testArtifact(), []byte(tc.script))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.RuleID+"@"+itoa(f.Line))
				if !strings.Contains(f.Message, "here-document at line") {
					t.Errorf("message %q does not say where the job is", f.Message)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("findings %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHeredocBody: the text a reader gets from a here-document, line for
// line: literal for a quoted delimiter (without the delimiter's line),
// expanded where known for an unquoted one.
func TestHeredocBody(t *testing.T) {
	tests := []struct{ name, script, want string }{
		{"quoted", "cat <<'EOF'\na $X\nb\nEOF\n", "a $X\nb\n"},
		{"quoted with a tab-stripping delimiter", "cat <<-\"EOF\"\n\ta $X\n\tEOF\n", "a $X\n"},
		{"unquoted, known", "X=1\ncat <<EOF\na $X ${X}\nEOF\n", "a 1 1\n"},
		{"unquoted, unknown kept as written", "cat <<EOF\na $Y $(hostname -i) ${Z:-d}\nEOF\n", "a $Y $(hostname -i) ${Z:-d}\n"},
		{"escaped dollar", "X=1\ncat <<EOF\na \\$X \\\\ \\`\nEOF\n", "a $X \\ `\n"},
		{"backslash-newline keeps the line", "cat <<EOF\na \\\nb\nc $X\nEOF\n", "a \\\nb\nc $X\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := syntax.NewParser().Parse(strings.NewReader(tc.script), "")
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			got, found := "", false
			syntax.Walk(f, func(n syntax.Node) bool {
				switch n := n.(type) {
				case *syntax.CallExpr:
					for _, as := range n.Assigns {
						literalAssign(env, as)
					}
				case *syntax.Redirect:
					if n.Hdoc != nil {
						got, found = HeredocBody([]byte(tc.script), n, func(p *syntax.ParamExp) (string, bool) {
							v, ok := env[p.Param.Value]
							return v, ok && simpleParam(p)
						})
					}
				}
				return true
			})
			if !found || got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNestedJobsBound: jobs that submit jobs are read four levels deep,
// however deep they go.
func TestNestedJobsBound(t *testing.T) {
	fs, err := scanners.ScanBytes(context.Background(), New(), testArtifact(), hostile.NestedSbatchHeredocs(300))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != maxJobDepth {
		t.Errorf("%d findings, want %d (one per level read)", len(fs), maxJobDepth)
	}
	for i, f := range fs {
		if want := 4 + 3*i; f.Line != want || f.RuleID != RuleValueTruncated.ID {
			t.Errorf("finding %d: %s at line %d, want %s at %d", i, f.RuleID, f.Line, RuleValueTruncated.ID, want)
		}
	}
}

// TestSubmitScript: a script that is not a batch script itself but
// submits one through a here-document (submit.sh in a repository) is read
// for that job alone, wherever the job is in it.
func TestSubmitScript(t *testing.T) {
	pad := strings.Repeat("# setting things up\n", 600) // past the head
	script := "#!/bin/bash\r\n# Submits the training job with sbatch.\r\n" + pad + "sbatch <<EOF\n#!/bin/bash\n#SBATCH --container-image=registry.example.com#nvidia/pytorch:24.01-py3\nsrun true\nEOF\n"
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "repo", TargetKind: scanners.KindDir, Path: "tools/submit.sh", Size: int64(len(script))}
	head := []byte(script)[:scanners.HeadSize]
	if !New().Wants(a, head) {
		t.Fatal("submit script not wanted")
	}
	fs, err := scanners.ScanBytes(context.Background(), New(), a, []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	want := 3 + 600 + 2 // the directive's line
	if len(fs) != 1 || fs[0].RuleID != RuleValueTruncated.ID || fs[0].Line != want {
		t.Fatalf("got %+v, want one %s at line %d (and nothing about the submit script's own DOS line breaks)", fs, RuleValueTruncated.ID, want)
	}
	fs, err = scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "repo", TargetKind: scanners.KindDir, Path: "build.sh"}, []byte("#!/usr/bin/env bash\r\nmake all\n"))
	if err != nil || len(fs) != 0 {
		t.Errorf("a shell script that submits nothing: %v %v", fs, err)
	}
}
