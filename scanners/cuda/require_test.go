package cuda

import (
	"strings"
	"testing"
)

var (
	tesla = Props{CUDA: "12.2", Driver: "535.104.05", Arch: "8.0", Brand: "Tesla", HasDevice: true}
	noDev = Props{CUDA: "12.2", Driver: "535.104.05"}
)

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
		ok   bool
	}{
		{"535.104.05", "535.104.5", 0, true},
		{"12", "12.0", 0, true},
		{"12.0.0", "12", 0, true},
		{"535.104.05", "535.104", 1, true},
		{"535.104", "535.104.05", -1, true},
		{"12.4", "12.10", -1, true},
		{"450.80.02", "450.80.2", 0, true},
		{"12..4", "12.4", 0, true}, // runs of dots are one separator
		{"12.4.", "12.4", 0, true},
		{"", "", 0, true},
		{"", "1", -1, true},
		{"0.0", "", 0, true},
		{"12.4a", "12.4", 0, false},
		{"v12", "12", 0, false},
		{".5", "0.5", 0, false},                    // no digits where a number is due
		{"18446744073709551615", "1", 0, false},    // UINTMAX_MAX is invalid
		{"99999999999999999999999", "1", 0, false}, // overflow saturates to UINTMAX_MAX
		{"18446744073709551614", "1", 1, true},
	}
	for _, tt := range tests {
		got, ok := CompareVersions(tt.a, tt.b)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("CompareVersions(%q, %q) = %d, %v; want %d, %v", tt.a, tt.b, got, ok, tt.want, tt.ok)
		}
	}
}

func TestEvaluateRequirement(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		p       Props
		sat     bool
		invalid bool
		term    int
	}{
		{"cuda floor holds", "cuda>=12.2", tesla, true, false, 0},
		{"cuda floor fails", "cuda>=12.4", tesla, false, false, -1},
		{"branch alternative", "cuda>=12.4 brand=tesla,driver>=535,driver<536", tesla, true, false, 1},
		{"branch alternative wrong branch", "cuda>=12.4 brand=tesla,driver>=470,driver<471", tesla, false, false, -1},
		{"brand case-insensitive", "cuda>=13.0 BRAND=TESLA,DRIVER>=535,driver<536", tesla, true, false, 1},
		{"name case-insensitive", "CUDA>=12.0", tesla, true, false, 0},
		{"leading zeros", "driver=535.104.5", tesla, true, false, 0},
		{"empty terms skipped", "  cuda>=12.0  ", tesla, true, false, 2},
		{"empty factors skipped", ",,cuda>=12.0,,", tesla, true, false, 0},
		{"empty expression", "", tesla, true, false, -1},
		{"only commas", ",", tesla, true, false, 0},
		{"tab is not a separator", "cuda>=12.0\tbrand=tesla", tesla, false, true, -1},
		{"=> invalid", "cuda=>12.0", tesla, false, true, -1},
		{"== invalid", "cuda==12.2", tesla, false, true, -1},
		{"<> invalid", "cuda<>12.2", tesla, false, true, -1},
		{"!! invalid", "cuda!!12.2", tesla, false, true, -1},
		{"unknown name invalid", "memory>=80", tesla, false, true, -1},
		{"no name invalid", ">=12", tesla, false, true, -1},
		{"no operator invalid", "cuda", tesla, false, true, -1},
		{"no value invalid", "cuda>=", tesla, false, true, -1},
		{"brand < invalid", "brand<tesla", tesla, false, true, -1},
		{"non-numeric version invalid", "cuda>=12.x", tesla, false, true, -1},
		// Short-circuit: the invalid part is never reached.
		{"or short-circuit hides invalid", "cuda>=12.0 bogus", tesla, true, false, 0},
		{"and short-circuit hides invalid", "cuda>=13.0,bogus cuda>=12.0", tesla, true, false, 1},
		{"invalid reached", "cuda>=13.0 bogus", tesla, false, true, -1},
		{"!= version", "driver!=535.104.05", tesla, false, false, -1},
		{"arch", "arch>=8.0", tesla, true, false, 0},
		{"arch too low", "arch>=9.0", tesla, false, false, -1},
		{"no device: arch true", "arch>=9.0", noDev, true, false, 0},
		{"no device: brand true even if odd", "brand<>x", noDev, false, true, -1},
		{"no device: brand true", "brand=geforce", noDev, true, false, 0},
		{"no device: arch value unchecked", "arch>=abc", noDev, true, false, 0},
		{"long failing factor exceeds EXPR_MAX", "driver=" + strings.Repeat("9", 125), tesla, false, true, -1},
		{"long passing factor fine", "driver>" + strings.Repeat("1.", 70), tesla, true, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := EvaluateRequirement(tt.expr, tt.p)
			if r.Satisfied != tt.sat || r.Invalid != tt.invalid || r.Term != tt.term {
				t.Errorf("EvaluateRequirement(%q) = %+v; want satisfied=%v invalid=%v term=%d", tt.expr, r, tt.sat, tt.invalid, tt.term)
			}
		})
	}
}

func TestRequirementMessage(t *testing.T) {
	r := EvaluateRequirement("cuda>=12.4 brand=tesla,driver>=470,driver<471", tesla)
	want := "requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a newer version, or use an earlier cuda container"
	if r.Message != want {
		t.Errorf("message = %q\nwant      %q", r.Message, want)
	}
	r = EvaluateRequirement("driver>=550 cuda>=12.0,arch>=9.0", tesla)
	if r.Message != "requirement error: unsatisfied condition: driver>=550" {
		t.Errorf("message = %q", r.Message)
	}
}

func TestParseImageEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		reqs     []string
		disabled bool
		legacy   bool
		invalid  string
	}{
		{"legacy synthesis", []string{"CUDA_VERSION=12.4.1"}, []string{"cuda>=12.4"}, false, true, ""},
		{"legacy major only", []string{"CUDA_VERSION=11"}, []string{"cuda>=11.0"}, false, true, ""},
		{"legacy empty require counts as absent", []string{"CUDA_VERSION=12.1.0", "NVIDIA_REQUIRE_CUDA="}, []string{"", "cuda>=12.1"}, false, true, ""},
		{"legacy leading zero invalid", []string{"CUDA_VERSION=12.04"}, nil, false, true, "12.04"},
		{"legacy four parts invalid", []string{"CUDA_VERSION=12.4.1.1"}, nil, false, true, "12.4.1.1"},
		{"require set", []string{"CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.4"}, []string{"cuda>=12.4"}, false, false, ""},
		{"all NVIDIA_REQUIRE_ but JETPACK", []string{"NVIDIA_REQUIRE_CUDA=cuda>=12.4", "NVIDIA_REQUIRE_ARCH=arch>=8.0", "NVIDIA_REQUIRE_JETPACK=csv-mounts=all", "NVIDIA_REQUIRE_JETPACK_HOST_MOUNTS="},
			[]string{"arch>=8.0", "cuda>=12.4"}, false, false, ""},
		{"later entry wins", []string{"NVIDIA_REQUIRE_CUDA=cuda>=11.0", "NVIDIA_REQUIRE_CUDA=cuda>=12.0"}, []string{"cuda>=12.0"}, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ParseImageEnv(tt.env)
			var got []string
			for _, r := range e.Requirements {
				got = append(got, r.Expr)
			}
			if strings.Join(got, "|") != strings.Join(tt.reqs, "|") || e.Disabled != tt.disabled || e.Legacy != tt.legacy || e.LegacyInvalid != tt.invalid {
				t.Errorf("ParseImageEnv = reqs %q disabled %v legacy %v invalid %q", got, e.Disabled, e.Legacy, e.LegacyInvalid)
			}
		})
	}
}

func TestDisableRequireParseBool(t *testing.T) {
	for v, want := range map[string]bool{
		"1": true, "t": true, "T": true, "TRUE": true, "true": true, "True": true,
		"0": false, "false": false, "yes": false, "on": false, "": false, "tRUE": false, " true": false,
	} {
		e := ParseImageEnv([]string{"CUDA_VERSION=12.4.1", "NVIDIA_DISABLE_REQUIRE=" + v})
		if e.Disabled != want {
			t.Errorf("NVIDIA_DISABLE_REQUIRE=%q: disabled = %v, want %v", v, e.Disabled, want)
		}
	}
}

func FuzzEvaluateRequirement(f *testing.F) {
	for _, s := range []string{
		"cuda>=12.4 brand=tesla,driver>=535,driver<536", "cuda=>12", ",", " ", "arch>=8.0,brand!=geforce",
		"driver<=535.104.05", "cuda>=12.0\tbrand=tesla", "brand=TITANRTX,driver>=470,driver<471",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		for _, p := range []Props{tesla, noDev} {
			r := EvaluateRequirement(expr, p)
			if r.Satisfied && r.Invalid {
				t.Fatalf("%q: both satisfied and invalid", expr)
			}
			if r.Satisfied && r.Term >= 0 && !strings.Contains(expr, r.TermText) {
				t.Fatalf("%q: term %q not in expression", expr, r.TermText)
			}
			// A satisfied first alternative hides whatever follows.
			if got := EvaluateRequirement("cuda>=1 "+expr, p); !got.Satisfied || got.Term != 0 {
				t.Fatalf("cuda>=1 %q: %+v, want the first alternative to hold", expr, got)
			}
		}
	})
}

func FuzzCompareVersions(f *testing.F) {
	for _, s := range [][2]string{{"535.104.05", "535.104.5"}, {"12", "12.0"}, {"12..4", "1.2"}, {"", "0"}, {"1.x", "1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ab, ok1 := CompareVersions(a, b)
		ba, ok2 := CompareVersions(b, a)
		if ok1 != ok2 {
			t.Fatalf("validity not symmetric for %q, %q", a, b)
		}
		if !ok1 {
			return
		}
		if ab != -ba {
			t.Fatalf("CompareVersions(%q,%q)=%d but reversed %d", a, b, ab, ba)
		}
		if aa, _ := CompareVersions(a, a); aa != 0 {
			t.Fatalf("CompareVersions(%q,%q)=%d", a, a, aa)
		}
		// The comparator agrees with the DSL's own operators.
		le := dslCompareVersion(a, opLessEqual, b) == 1
		ge := dslCompareVersion(a, opGreaterEqual, b) == 1
		ne := dslCompareVersion(a, opNotEqual, b) == 1
		if le != (ab <= 0) || ge != (ab >= 0) || ne != (ab != 0) {
			t.Fatalf("%q vs %q: cmp %d but <=%v >=%v !=%v", a, b, ab, le, ge, ne)
		}
	})
}
