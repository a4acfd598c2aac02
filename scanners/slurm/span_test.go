package slurm

import (
	"strings"
	"testing"
)

// TestSettingValueSpan: a setting from the script says where its value is
// written in its line, so that the value can be rewritten in place, and
// whether an unescaped '#' cut it.
func TestSettingValueSpan(t *testing.T) {
	long := strings.Repeat("x", 70000)
	tests := []struct {
		name    string
		script  string
		option  string // the setting's name
		value   string // its Value
		written string // Text[ValueSpan]; "" for the zero Span
		cut     bool
	}{
		{name: "after equals", script: "#!/bin/sh\n#SBATCH --container-image=ubuntu:22.04\n",
			option: "container-image", value: "ubuntu:22.04", written: "ubuntu:22.04"},
		{name: "next word", script: "#!/bin/sh\n#SBATCH -p gpu --container-image  ubuntu:22.04 -N1\n",
			option: "container-image", value: "ubuntu:22.04", written: "ubuntu:22.04"},
		{name: "abbreviated option", script: "#!/bin/sh\n#SBATCH --container-im=ubuntu:22.04\n",
			option: "container-image", value: "ubuntu:22.04", written: "ubuntu:22.04"},
		{name: "short option joined", script: "#!/bin/sh\n#SBATCH -vJtrain\n",
			option: "job-name", value: "train", written: "train"},
		{name: "short option apart", script: "#!/bin/sh\n#SBATCH -J train\n",
			option: "job-name", value: "train", written: "train"},
		{name: "quoted value", script: "#!/bin/sh\n#SBATCH --container-image=\"registry.example.com#nvidia/pytorch:24.01-py3\"\n",
			option: "container-image", value: "registry.example.com#nvidia/pytorch:24.01-py3", written: "registry.example.com#nvidia/pytorch:24.01-py3"},
		{name: "quoted word", script: "#!/bin/sh\n#SBATCH '--container-image=ubuntu:22.04'\n",
			option: "container-image", value: "ubuntu:22.04", written: "ubuntu:22.04"},
		{name: "quote inside the value", script: "#!/bin/sh\n#SBATCH --job-name=a\"b c\"d\n",
			option: "job-name", value: "ab cd"},
		{name: "escaped hash", script: "#!/bin/sh\n#SBATCH --container-image=registry.example.com\\#nvidia/pytorch:24.01-py3\n",
			option: "container-image", value: "registry.example.com#nvidia/pytorch:24.01-py3"},
		{name: "escape before the value", script: "#!/bin/sh\n#SBATCH --job\\-name=train\n",
			option: "job-name", value: "train", written: "train"},
		{name: "cut at hash", script: "#!/bin/sh\n#SBATCH --container-image=registry.example.com#nvidia/pytorch:24.01-py3\n",
			option: "container-image", value: "registry.example.com", written: "registry.example.com", cut: true},
		{name: "cut next word", script: "#!/bin/sh\n#SBATCH --container-image ubuntu:22.04#old\n",
			option: "container-image", value: "ubuntu:22.04", written: "ubuntu:22.04", cut: true},
		{name: "comment after a space", script: "#!/bin/sh\n#SBATCH --time=10 # minutes\n",
			option: "time", value: "10", written: "10"},
		{name: "empty value", script: "#!/bin/sh\n#SBATCH --job-name=\n",
			option: "job-name", value: ""},
		{name: "value on the next line", script: "#!/bin/sh\n#SBATCH --job-name\n#SBATCH train\n",
			option: "job-name", value: "train"},
		{name: "slurm magic word", script: "#!/bin/sh\n#SLURM --job-name=train\n",
			option: "job-name", value: "train", written: "train"},
		{name: "crlf", script: "#!/bin/sh\r\n#SBATCH --container-image=ubuntu:22.04\r\ntrue\r\n",
			option: "container-image", value: "ubuntu:22.04", written: "ubuntu:22.04"},
		{name: "long line", script: "#!/bin/sh\n#SBATCH --comment=" + long + " --container-image=ubuntu:22.04\n",
			option: "container-image", value: "ubuntu:22.04", written: "ubuntu:22.04"},
		{name: "optional argument", script: "#!/bin/sh\n#SBATCH --nice=10\n",
			option: "nice", value: "10", written: "10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Parse([]byte(tc.script))
			var st *Setting
			for i := range s.Settings {
				if s.Settings[i].Name == tc.option {
					st = &s.Settings[i]
				}
			}
			if st == nil {
				t.Fatalf("no --%s setting in %+v (problems %+v)", tc.option, s.Settings, s.Problems)
			}
			if st.Value != tc.value || st.Truncated != tc.cut {
				t.Errorf("value %q, truncated %v; want %q, %v", st.Value, st.Truncated, tc.value, tc.cut)
			}
			written := ""
			if st.ValueSpan != (Span{}) {
				written = directiveAt(s, st.Line).Text[st.ValueSpan.Start:st.ValueSpan.End]
			}
			if written != tc.written {
				t.Errorf("written %q (span %+v), want %q", written, st.ValueSpan, tc.written)
			}
		})
	}
}

func directiveAt(s *Script, line int) Directive {
	for _, d := range s.Directives {
		if d.Line == line {
			return d
		}
	}
	return Directive{}
}

// checkSpans fails unless every setting's ValueSpan holds its value.
func checkSpans(t *testing.T, s *Script) {
	t.Helper()
	for _, st := range s.Settings {
		if st.ValueSpan == (Span{}) {
			continue
		}
		text := directiveAt(s, st.Line).Text
		sp := st.ValueSpan
		if sp.Start < 0 || sp.Start >= sp.End || sp.End > len(text) || text[sp.Start:sp.End] != st.Value {
			t.Fatalf("setting %+v: span does not hold the value in %q", st, text)
		}
	}
}
