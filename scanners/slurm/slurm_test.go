package slurm

import (
	"context"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func testArtifact() *scanners.Artifact {
	return &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "job.sh", TargetKind: scanners.KindScript, Path: "job.sh"}
}

func TestScanner(t *testing.T) {
	// Built at run time so that no format-valid token sits in the repository.
	token := "hf_" + strings.Repeat("Ab3", 11) + "x"
	tests := []struct {
		name   string
		script string
		want   []string // "rule@line"
		inMsg  string
		notIn  string
	}{
		{name: "clean", script: "#!/bin/bash\n#SBATCH --time=10\nsrun true\n"},
		{name: "ignored", script: "#!/bin/bash\necho start\n#SBATCH --gres=gpu:8\n",
			want: []string{"misconfig/sbatch-directive-ignored@3"}, inMsg: "after the first command (line 2)"},
		{name: "truncated", script: "#!/bin/bash\n#SBATCH --container-image=registry.example.com#nvidia/pytorch:24.01-py3\nsrun true\n",
			want:  []string{"misconfig/sbatch-value-truncated@2"},
			inMsg: `reaches Slurm as '--container-image=registry.example.com'`},
		{name: "invalid", script: "#!/bin/bash\n#SBATCH --mail-type=BEGIN, END\nsrun true\n",
			want: []string{"misconfig/sbatch-invalid@2"}, inMsg: "remove the space after the comma: --mail-type=BEGIN,END"},
		{name: "secret in ignored directive is redacted", script: "#!/bin/bash\ntrue\n#SBATCH --export=HF_TOKEN=" + token + "\n",
			want: []string{"misconfig/sbatch-directive-ignored@3"}, notIn: token},
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
				if f.Check != "misconfig" {
					t.Errorf("check %q", f.Check)
				}
				if tc.inMsg != "" && !strings.Contains(f.Message, tc.inMsg) {
					t.Errorf("message %q lacks %q", f.Message, tc.inMsg)
				}
				if tc.notIn != "" && (strings.Contains(f.Message, tc.notIn) || strings.Contains(f.Evidence, tc.notIn)) {
					t.Errorf("finding shows the secret: %+v", f)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("findings %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScannerArgs(t *testing.T) {
	sc := New(WithArgs([]string{"--time"}))
	fs := sc.ScanScript(testArtifact(), []byte("#!/bin/bash\ntrue\n"))
	if len(fs) != 1 || fs[0].RuleID != RuleInvalid.ID || !strings.Contains(fs[0].Message, "command line") {
		t.Errorf("got %+v", fs)
	}
}

func TestWants(t *testing.T) {
	sc := New()
	cases := []struct {
		path, head string
		kind       scanners.TargetKind
		want       bool
	}{
		{"-", "anything", scanners.KindScript, true},
		{"train.sh", "#!/bin/bash\n#SBATCH -N1\n", scanners.KindDir, true},
		{"train.sh", "#!/bin/bash\necho hi\n", scanners.KindDir, false},
		{"submit.sh", "#!/bin/bash\nsbatch <<EOF\n", scanners.KindDir, true},
		{"job.sbatch", "echo hi\n", scanners.KindDir, true},
		{"README.md", "#!/bin/bash\n#SBATCH -N1\n", scanners.KindDir, false},
		{"run.sh", "#!/bin/bash\n  #sbatch --gres=gpu:1\n", scanners.KindDir, true},
	}
	for _, c := range cases {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: c.path, TargetKind: c.kind, Size: int64(len(c.head))}
		if got := sc.Wants(a, []byte(c.head)); got != c.want {
			t.Errorf("Wants(%s, %q) = %v, want %v", c.path, c.head, got, c.want)
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
