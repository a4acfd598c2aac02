package slurm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type parseCase struct {
	name    string
	script  string
	words   [][]string // words of each directive sbatch reads
	ignored []int      // lines of ignored directives
	trunc   string     // Truncation.Read of the first truncated directive
	problem string     // substring of the first problem; "" for none
	pyxis   bool       // uses pyxis options (the conformance test skips it)
}

var parseCases = []parseCase{
	{name: "clean", script: "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH -N 2 -J train\n\n# a comment\n#SBATCH --mem=4G\nsrun true\n",
		words: [][]string{{"--time=1:00:00"}, {"-N", "2", "-J", "train"}, {"--mem=4G"}}},
	{name: "after first command", script: "#!/bin/bash\n#SBATCH --time=10\nmodule load cuda\n#SBATCH --gres=gpu:8\nsrun true\n",
		words: [][]string{{"--time=10"}}, ignored: []int{4}},
	{name: "indented", script: "#!/bin/bash\n  #SBATCH --gres=gpu:1\n#SBATCH --time=10\ntrue\n",
		words: [][]string{{"--time=10"}}, ignored: []int{2}},
	{name: "wrong case and space", script: "#!/bin/bash\n#sbatch --gres=gpu:1\n# SBATCH --mem=1G\n#Sbatch -N1\n#SBATCH --time=10\ntrue\n",
		words: [][]string{{"--time=10"}}, ignored: []int{2, 3, 4}},
	{name: "disabled on purpose", script: "#!/bin/bash\n##SBATCH --gres=gpu:1\n# run with sbatch this file\n#SBATCH --time=10\ntrue\n",
		words: [][]string{{"--time=10"}}},
	{name: "heredoc after command", script: "#!/bin/bash\n#SBATCH --time=10\ncat > next.sh <<'EOF'\n#!/bin/bash\n#SBATCH --gres=gpu:1\nEOF\n#SBATCH --mem=1G\n",
		words: [][]string{{"--time=10"}}, ignored: []int{7}},
	{name: "truncated image", pyxis: true, script: "#!/bin/bash\n#SBATCH --container-image=registry.example.com#nvidia/pytorch:24.01-py3\nsrun python train.py\n",
		words: [][]string{{"--container-image=registry.example.com"}}, trunc: "--container-image=registry.example.com"},
	{name: "quoted hash kept", pyxis: true, script: "#!/bin/bash\n#SBATCH --container-image=\"registry.example.com#nvidia/pytorch:24.01-py3\"\ntrue\n",
		words: [][]string{{"--container-image=registry.example.com#nvidia/pytorch:24.01-py3"}}},
	{name: "escaped hash kept", script: "#!/bin/bash\n#SBATCH --comment=run\\#5\ntrue\n",
		words: [][]string{{"--comment=run#5"}}},
	{name: "trailing comment", script: "#!/bin/bash\n#SBATCH --time=10 # ten minutes\ntrue\n",
		words: [][]string{{"--time=10"}}},
	{name: "truncated comment", script: "#!/bin/bash\n#SBATCH --comment=run#5\ntrue\n",
		words: [][]string{{"--comment=run"}}, trunc: "--comment=run"},
	{name: "space after comma", script: "#!/bin/bash\n#SBATCH --mail-type=BEGIN, END\ntrue\n",
		words: [][]string{{"--mail-type=BEGIN,", "END"}}, problem: "Invalid directive found in batch script: END"},
	{name: "optional argument with space", script: "#!/bin/bash\n#SBATCH --time=1 --nice 0\ntrue\n",
		words: [][]string{{"--time=1", "--nice", "0"}}, problem: "Invalid directive found in batch script: 0"},
	{name: "unknown option", script: "#!/bin/bash\n#SBATCH --bogus=1\ntrue\n",
		words: [][]string{{"--bogus=1"}}, problem: "unrecognized option '--bogus=1'"},
	{name: "missing argument", script: "#!/bin/bash\n#SBATCH --time\n",
		words: [][]string{{"--time"}}, problem: "option '--time' requires an argument"},
	{name: "argument not allowed", script: "#!/bin/bash\n#SBATCH --verbose=x\n",
		words: [][]string{{"--verbose=x"}}, problem: "option '--verbose' doesn't allow an argument"},
	{name: "ambiguous prefix", script: "#!/bin/bash\n#SBATCH --acc=x\n",
		words: [][]string{{"--acc=x"}}, problem: "option '--acc=x' is ambiguous"},
	{name: "unique prefix", script: "#!/bin/bash\n#SBATCH --parti=gpu\n",
		words: [][]string{{"--parti=gpu"}}},
	{name: "value on the next line", script: "#!/bin/bash\n#SBATCH -J\n#SBATCH --time=1\n",
		words: [][]string{{"-J"}, {"--time=1"}}},
	{name: "unmatched quote", script: "#!/bin/bash\n#SBATCH --job-name=\"a b\n",
		words: [][]string{nil}, problem: "Unmatched `\"`"},
	{name: "leading colon", script: "#!/bin/bash\n#SBATCH --job-name=\"a b\" :x\n",
		words: [][]string{{"--job-name=a b"}}, problem: "Unexpected `:`"},
	{name: "glued magic word", script: "#!/bin/bash\n#SBATCHzz\n",
		words: [][]string{{"zz"}}, problem: "Invalid directive found in batch script: zz"},
	{name: "no shebang", script: "#SBATCH --time=1\necho hi\n",
		words: [][]string{{"--time=1"}}, problem: "does not look like a batch script"},
	{name: "dos line breaks", script: "#!/bin/sh\r\n#SBATCH --time=1\r\ntrue\r\n",
		words: [][]string{{"--time=1"}}, problem: "DOS line breaks"},
	{name: "short cluster", script: "#!/bin/sh\n#SBATCH -vN1\ntrue\n",
		words: [][]string{{"-vN1"}}},
	{name: "double dash", script: "#!/bin/sh\n#SBATCH --time=1 -- zz\n",
		words: [][]string{{"--time=1", "--", "zz"}}, problem: "Invalid directive found in batch script: zz"},
	{name: "hetjob", script: "#!/bin/sh\n#SBATCH --time=1\n#SBATCH hetjob\n#SBATCH --time=2\ntrue\n",
		words: [][]string{{"--time=1"}, nil, {"--time=2"}}},
	{name: "slurm magic word", script: "#!/bin/sh\n#SLURM --time=1\ntrue\n",
		words: [][]string{{"--time=1"}}},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			s := Parse([]byte(tc.script))
			var words [][]string
			for _, d := range s.Directives {
				words = append(words, d.Words)
			}
			if !reflect.DeepEqual(words, tc.words) {
				t.Errorf("words = %q, want %q", words, tc.words)
			}
			var ignored []int
			for _, ig := range s.Ignored {
				ignored = append(ignored, ig.Line)
			}
			if !reflect.DeepEqual(ignored, tc.ignored) {
				t.Errorf("ignored lines = %v, want %v (%+v)", ignored, tc.ignored, s.Ignored)
			}
			var trunc string
			for _, d := range s.Directives {
				if d.Truncated != nil {
					trunc = d.Truncated.Read
					break
				}
			}
			if trunc != tc.trunc {
				t.Errorf("truncated = %q, want %q", trunc, tc.trunc)
			}
			switch {
			case tc.problem == "" && len(s.Problems) > 0:
				t.Errorf("unexpected problems %+v", s.Problems)
			case tc.problem != "" && (len(s.Problems) == 0 || !strings.Contains(s.Problems[0].Message, tc.problem)):
				t.Errorf("problems = %+v, want first to contain %q", s.Problems, tc.problem)
			}
		})
	}
}

func TestEffective(t *testing.T) {
	s := Parse([]byte("#!/bin/bash\n#SBATCH --container-image=registry.example.com/nvidia/pytorch:24.01-py3\n#SBATCH -p gpu --time=10\ntrue\n"))
	eff, probs := s.Effective(
		[]string{"SBATCH_PARTITION=debug", "_SLURM_SPANK_OPTION_pyxis_container_image=ubuntu:latest", "HOME=/root"},
		[]string{"--time=20", "-J", "x"})
	if len(probs) > 0 {
		t.Fatalf("problems: %+v", probs)
	}
	want := map[string]string{"container-image": "ubuntu:latest", "partition": "debug", "time": "20", "job-name": "x"}
	for k, v := range want {
		if eff[k].Value != v {
			t.Errorf("%s = %q (%s), want %q", k, eff[k].Value, eff[k].Source, v)
		}
	}
	if eff["container-image"].Source != FromEnv || eff["time"].Source != FromArgs {
		t.Errorf("sources: %+v", eff)
	}
	if _, probs := s.Effective(nil, []string{"--time"}); len(probs) != 1 {
		t.Errorf("missing argument on the command line not reported: %+v", probs)
	}
}

func TestSplitArgs(t *testing.T) {
	got, err := SplitArgs(`--container-image='registry.example.com#nvidia/pytorch:24.01' -J "a b" x\ y`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--container-image=registry.example.com#nvidia/pytorch:24.01", "-J", "a b", "x y"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := SplitArgs(`-J "a`); err == nil {
		t.Error("unmatched quote not reported")
	}
}

// TestAgainstSbatch runs the real sbatch on every case and checks that it
// refuses exactly the scripts Parse finds a problem in. sbatch talks to a
// controller address where nothing listens, so a script it accepts fails
// fast with "Unable to contact slurm controller".
func TestAgainstSbatch(t *testing.T) {
	sbatch, err := exec.LookPath("sbatch")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sbatch is not installed (run .ci/slurm.sh)")
		}
		t.Skip("sbatch is not installed")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=t\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\nMessageTimeout=1\n"+
		"NodeName=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\nPartitionName=debug Nodes=ALL Default=YES State=UP\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range parseCases {
		if tc.pyxis {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, "job.sh")
			if err := os.WriteFile(f, []byte(tc.script), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sbatch, f)
			cmd.Dir = dir
			cmd.Env = []string{"SLURM_CONF=" + conf, "PATH=/usr/bin:/bin"}
			out, _ := cmd.CombinedOutput()
			refused := !strings.Contains(string(out), "Unable to contact slurm controller")
			s := Parse([]byte(tc.script))
			if refused != (len(s.Problems) > 0) {
				t.Errorf("sbatch refused=%v (%s), Parse problems=%+v", refused, out, s.Problems)
			}
			if tc.problem != "" && !strings.Contains(strings.ReplaceAll(string(out), "\nsbatch: error: ", " "), tc.problem) {
				t.Errorf("sbatch said %q, want it to contain %q", out, tc.problem)
			}
		})
	}
}

// TestOptionTableAgainstSbatch checks the option table's argument kinds
// against the real sbatch.
func TestOptionTableAgainstSbatch(t *testing.T) {
	sbatch, err := exec.LookPath("sbatch")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sbatch is not installed (run .ci/slurm.sh)")
		}
		t.Skip("sbatch is not installed")
	}
	if testing.Short() {
		t.Skip("probes every option")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	os.WriteFile(conf, []byte("ClusterName=t\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\nMessageTimeout=1\n"), 0o644)
	run := func(script string) string {
		f := filepath.Join(dir, "p.sh")
		os.WriteFile(f, []byte(script), 0o644)
		cmd := exec.Command(sbatch, f)
		cmd.Env = []string{"SLURM_CONF=" + conf}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	for _, o := range sbatchOptions {
		if o.Name == "help" || o.Name == "usage" || o.Name == "version" {
			continue // they exit before reading further
		}
		out := run("#!/bin/sh\n#SBATCH --" + o.Name + "=x\n")
		gotNoArg := strings.Contains(out, "doesn't allow an argument")
		if strings.Contains(out, "unrecognized option") {
			t.Errorf("--%s: sbatch does not know it", o.Name)
			continue
		}
		if gotNoArg != (o.arg == noArg) {
			t.Errorf("--%s: sbatch says no argument allowed=%v, table says %v", o.Name, gotNoArg, o.arg)
		}
		if o.arg == noArg {
			continue
		}
		out = run("#!/bin/sh\n#SBATCH --" + o.Name + "\n#SBATCH zzz\n")
		gotOptional := strings.Contains(out, "Invalid directive found in batch script: zzz")
		if gotOptional != (o.arg == optionalArg) {
			t.Errorf("--%s: sbatch optional=%v, table says %v", o.Name, gotOptional, o.arg)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.script))
	}
	for _, s := range []string{
		"#!/bin/sh\n#SBATCH --container-image \"a#b\"'c'\\#d#e -vJx\n#SBATCH --container-im=r.example.com#n/p:1\n",
		"#!/bin/sh\r\n#SLURM -J\r\n#SBATCH x\\\n--nice=1\x00#z\ntrue\n",
		"#!/bin/bash\nI='a#b'\nsbatch -p x <<EOF\n#!/bin/bash\n#SBATCH --container-image=$I\n#SBATCH --x \\\n y\nsbatch <<'E2'\n#SBATCH -N\nE2\nEOF\ncat <<-E | sbatch --\n\t#!/bin/sh\n\tE\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Parse(data)
		checkSpans(t, s)
		for _, d := range s.Directives {
			if d.Line <= 0 || (s.FirstCommand > 0 && d.Line >= s.FirstCommand) {
				t.Fatalf("directive at line %d, first command at %d", d.Line, s.FirstCommand)
			}
		}
		s.Effective([]string{"SBATCH_TIMELIMIT=1"}, []string{"--time=2"})
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, f := range New().ScanScript(testArtifact(), data) {
			if f.Line < 0 || f.Line > lines {
				t.Fatalf("finding at line %d of %d: %+v", f.Line, lines, f)
			}
		}
	})
}
