package cuda

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mlwarden/mlwarden/rules"
)

var defaultTable = sync.OnceValues(rules.DefaultCUDA)

func table(t testing.TB) *rules.CUDATable {
	t.Helper()
	tb, err := defaultTable()
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func host(driver string, gpus ...string) HostFacts {
	h := HostFacts{DriverVersion: driver}
	for _, g := range gpus {
		gpu, err := ParseGPUFlag(g)
		if err != nil {
			panic(err)
		}
		h.GPUs = append(h.GPUs, gpu)
	}
	if err := h.Normalize(); err != nil {
		panic(err)
	}
	return h
}

func declared(cuda string) Declared {
	var d Declared
	d.add(Evidence{What: "test", CUDA: cuda})
	return d
}

// TestBoundaryDrivers walks every boundary of the table: the driver just at
// a minimum passes and the one just below fails.
func TestBoundaryDrivers(t *testing.T) {
	tb := table(t)
	tests := []struct {
		cuda, driver, os string
		want             Verdict
	}{
		// 11.x minor-version compatibility floor.
		{"11.8", "450.80.02", "linux", Compatible},
		{"11.8", "450.80.2", "linux", Compatible},
		{"11.8", "450.80.01", "linux", Incompatible},
		{"11.0", "450.51.05", "linux", Compatible}, // native: R450 reports 11.0
		{"11.8", "452.39", "windows", Compatible},
		{"11.8", "452.38", "windows", Incompatible},
		// 12.x floor.
		{"12.4", "525.60.13", "linux", Compatible},
		{"12.4", "525.60.12", "linux", Incompatible},
		{"12.9", "528.33", "windows", Compatible},
		{"12.9", "528.32", "windows", Incompatible},
		// Native support from the branch.
		{"12.4", "550.54.14", "linux", Compatible},
		{"12.4", "520.61.05", "linux", Incompatible},
		// 13.x needs R580.
		{"13.0", "580.65.06", "linux", Compatible},
		{"13.2", "580.65.06", "linux", Compatible}, // minor-version compatibility
		{"13.0", "575.57.08", "linux", Incompatible},
		{"13.4", "580.95.05", "linux", Compatible},
		// 10.x: no minor-version compatibility.
		{"10.2", "440.33", "linux", Compatible},
		{"10.2", "418.39", "linux", Incompatible},
		{"10.1", "418.39", "linux", Compatible},
		{"10.0", "410.48", "linux", Compatible},
		{"10.0", "396.26", "linux", Incompatible},
		// Newer drivers run older CUDA.
		{"11.8", "580.65.06", "linux", Compatible},
	}
	for _, tt := range tests {
		h := host(tt.driver)
		h.OS = tt.os
		ev := Evaluate(tb, declared(tt.cuda), "h", h)
		if ev.Verdict != tt.want {
			t.Errorf("CUDA %s on %s driver %s: %s (%s), want %s", tt.cuda, tt.os, tt.driver, ev.Verdict, strings.Join(ev.Reasons, "; "), tt.want)
		}
	}
}

func TestToolkitDriverRows(t *testing.T) {
	tb := table(t)
	for _, tt := range []struct{ cuda, os, want string }{
		{"12.4", "linux", "550.54.14"},
		{"12.4", "windows", "551.61"},
		{"12.0", "linux", "525.60.13"},
		{"12.0", "windows", "527.41"},
		{"13.0", "linux", "580.65.06"},
		{"13.0", "windows", ""},
		{"11.0", "linux", "450.36.06"},
		{"10.2", "windows", "441.22"},
	} {
		if got, src := toolkitDriver(tb, tt.cuda, tt.os); got != tt.want || got != "" && !strings.HasPrefix(src, "https://") {
			t.Errorf("toolkitDriver(%s, %s) = %q %q, want %q", tt.cuda, tt.os, got, src, tt.want)
		}
	}
	for drv, want := range map[string]string{"535.104.05": "12.2", "550.54.15": "12.4", "580.65.06": "13.0", "600.1": "13.2", "470.82.01": "11.4", "400.1": ""} {
		if got, _ := hostCUDA(tb, HostFacts{DriverVersion: drv}); got != want {
			t.Errorf("hostCUDA(%s) = %q, want %q", drv, got, want)
		}
	}
}

func image(env ...string) Declared { return ExtractEnv(env, "image config") }

const req124 = "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471 brand=geforce,driver>=470,driver<471 brand=tesla,driver>=525,driver<526 brand=nvidia,driver>=525,driver<526 brand=geforce,driver>=525,driver<526 brand=tesla,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536 brand=geforce,driver>=535,driver<536"
const req130 = "cuda>=13.0 brand=unknown,driver>=535,driver<536 brand=tesla,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536 brand=tesla,driver>=570,driver<571 brand=nvidia,driver>=570,driver<571"

func fromImage(d Declared) Declared { d.FromImage = true; return d }

func TestEvaluateScenarios(t *testing.T) {
	tb := table(t)
	withCompat := func(d Declared, ver string) Declared {
		d.Merge(ExtractFile("/usr/local/cuda-13.0/compat/libcuda.so."+ver, nil))
		return d
	}
	tests := []struct {
		name  string
		d     Declared
		h     HostFacts
		want  Verdict
		rules []string
	}{
		{"nothing declared", Declared{}, host("535.104.05", "8.0:nvidia"), Unknown, nil},
		{"nvidia image 12.4 on R550", image("CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA="+req124), host("550.54.15", "9.0:nvidia"), Compatible, nil},
		// Minor-version compatibility wins over the branch alternative: a
		// 12.x driver at or above the 12.x floor runs 12.4 with no compat
		// libraries, on any GPU.
		{"nvidia image 12.4 on R535 tesla: minor-version compat, not forward compat", image("CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA="+req124), host("535.104.05", "8.0:tesla"), Compatible, nil},
		{"nvidia image 12.4 on R535 geforce: minor-version compat", image("CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA="+req124), host("535.104.05", "8.9:geforce"), Compatible, nil},
		{"image 11.8 through a brand clause on R470: minor-version compat at the 11.x floor", image("CUDA_VERSION=11.8.0", "NVIDIA_REQUIRE_CUDA=cuda>=11.8 brand=tesla,driver>=470,driver<471"), host("470.82.01", "8.0:tesla"), Compatible, nil},
		// An image whose files were walked and hold no compat library
		// cannot run a newer major through the branch marker.
		{"image 13.0 on R535 without compat libs: incompatible", fromImage(image("CUDA_VERSION=13.0.2", "NVIDIA_REQUIRE_CUDA="+req130)), host("535.104.05", "9.0:nvidia"), Incompatible, []string{RuleIncompatible}},
		{"image 13.0 on R535 with compat libs: forward compat", fromImage(withCompat(image("CUDA_VERSION=13.0.2", "NVIDIA_REQUIRE_CUDA="+req130), "580.65.06")), host("535.104.05", "9.0:nvidia"), CompatibleForwardCompat, []string{RuleForwardCompatRequired}},
		{"image 13.0 on R535 data center", image("CUDA_VERSION=13.0.2", "NVIDIA_REQUIRE_CUDA="+req130), host("535.104.05", "9.0:nvidia"), CompatibleForwardCompat, []string{RuleForwardCompatRequired}},
		{"image 13.0 on R550 data center: requirement fails", image("CUDA_VERSION=13.0.2", "NVIDIA_REQUIRE_CUDA="+req130), host("550.54.15", "9.0:nvidia"), Incompatible, []string{RuleIncompatible}},
		{"image 13.0 requirement on mixed GPUs: every GPU must pass", image("NVIDIA_REQUIRE_CUDA=" + req130), host("535.104.05", "9.0:nvidia", "8.9:geforce"), Incompatible, []string{RuleIncompatible}},
		{"legacy image synthesises cuda>=", image("CUDA_VERSION=12.4.1"), host("535.104.05", "8.0:nvidia"), Incompatible, []string{RuleIncompatible}},
		{"legacy image invalid CUDA_VERSION", image("CUDA_VERSION=12.04"), host("550.54.15", "8.0:nvidia"), Incompatible, []string{RuleRequirementInvalid}},
		{"invalid requirement", image("NVIDIA_REQUIRE_CUDA=cuda=>12.0"), host("550.54.15", "8.0:nvidia"), Incompatible, []string{RuleRequirementInvalid}},
		{"disabled requirement falls to minor compat", image("CUDA_VERSION=12.4.1", "NVIDIA_DISABLE_REQUIRE=true"), host("535.104.05", "8.0:nvidia"), Compatible, nil},
		{"disabled requirement, compat libs on geforce: 804", withCompat(image("CUDA_VERSION=12.2.0", "NVIDIA_DISABLE_REQUIRE=1"), "580.65.06"), host("535.104.05", "8.9:geforce"), Incompatible, []string{RuleIncompatible}},
		{"compat libs with equal major are not used", withCompat(image("CUDA_VERSION=12.2.0", "NVIDIA_DISABLE_REQUIRE=1"), "535.104.05"), host("535.104.05", "8.9:geforce"), Compatible, nil},
		{"cdi mode skips requirements", image("CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.4"), func() HostFacts { h := host("535.104.05", "8.0:nvidia"); h.ContainerToolkitMode = ModeCDI; return h }(), Compatible, nil},
		{"host forward compat 13.0 on R535", declared("13.0"), func() HostFacts {
			h := host("535.104.05", "9.0:nvidia")
			h.ForwardCompat = &ForwardCompat{CUDA: "13.0", SupportedBranches: []int{535, 550, 570}}
			return h
		}(), CompatibleForwardCompat, []string{RuleForwardCompatRequired}},
		{"host forward compat, unsupported branch", declared("13.0"), func() HostFacts {
			h := host("545.23.08", "9.0:nvidia")
			h.ForwardCompat = &ForwardCompat{CUDA: "13.0", SupportedBranches: []int{535, 550, 570}}
			return h
		}(), Incompatible, []string{RuleIncompatible}},
		{"host forward compat on windows", declared("13.0"), func() HostFacts {
			h := host("537.13", "9.0:nvidia")
			h.OS = "windows"
			h.ForwardCompat = &ForwardCompat{CUDA: "13.0"}
			return h
		}(), Incompatible, []string{RuleIncompatible}},
		{"image compat 13.1 on R550 (ELF-note branches)", withCompat(declared("13.1"), "590.44.01"), host("550.54.15", "9.0:nvidia"), CompatibleForwardCompat, []string{RuleForwardCompatRequired}},
		{"image compat 13.1 on R545: unsupported branch", withCompat(declared("13.1"), "590.44.01"), host("545.23.08", "9.0:nvidia"), Incompatible, []string{RuleIncompatible}},
		{"CUDA 13 on Volta: below the floor", declared("13.0"), host("580.65.06", "7.0:tesla"), Incompatible, []string{RuleArchUnsupported}},
		{"CUDA 12 on Kepler", declared("12.1"), host("535.104.05", "3.7:tesla"), Incompatible, []string{RuleArchUnsupported}},
		{"cu124 torch on Blackwell", func() Declared { d := declared("12.4"); d.NoPTX = true; return d }(), host("570.124.06", "12.0:geforcertx"), Incompatible, []string{RuleArchUnsupported}},
		{"CUDA 12.4 image on Blackwell: PTX may save it", declared("12.4"), host("570.124.06", "10.0:nvidia"), Compatible, nil},
		{"arch list without the GPU", func() Declared { d := declared("12.4"); d.Arch = ParseArchList("8.0 8.6"); return d }(), host("550.54.15", "9.0:nvidia"), Incompatible, []string{RuleArchUnsupported}},
		{"arch list with PTX", func() Declared { d := declared("12.4"); d.Arch = ParseArchList("8.0;8.6+PTX"); return d }(), host("550.54.15", "9.0:nvidia"), Compatible, nil},
		{"arch list PTX but driver older than toolkit", func() Declared { d := declared("12.4"); d.Arch = ParseArchList("8.0;8.6+PTX"); return d }(), host("535.104.05", "9.0:nvidia"), Incompatible, []string{RuleArchUnsupported}},
		{"arch-specific 9.0a only on 9.0", func() Declared { d := declared("12.4"); d.Arch = ParseArchList("9.0a"); return d }(), host("550.54.15", "10.0:nvidia"), Incompatible, []string{RuleArchUnsupported}},
		{"family 10.0f on 10.3", func() Declared { d := declared("12.9"); d.Arch = ParseArchList("10.0f"); return d }(), host("575.57.08", "10.3:nvidia"), Compatible, nil},
		{"driver below any table row", declared("10.0"), host("390.1"), Incompatible, []string{RuleIncompatible}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := Evaluate(tb, tt.d, "h", tt.h)
			var got []string
			for _, p := range ev.Problems {
				if !slices.Contains(got, p.Rule) {
					got = append(got, p.Rule)
				}
			}
			if ev.Verdict != tt.want || !sameSet(got, tt.rules) {
				t.Errorf("verdict %s rules %v, want %s %v\nreasons:\n  %s", ev.Verdict, got, tt.want, tt.rules, strings.Join(ev.Reasons, "\n  "))
			}
			if ev.Verdict != Unknown && len(ev.Reasons) == 0 {
				t.Error("no reasons")
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// TestForwardCompatNeedsTheLibraries: the incompatible verdict for an image
// without compat libraries says how to fix it, and the env-only inference
// says it is an inference.
func TestForwardCompatNeedsTheLibraries(t *testing.T) {
	tab := table(t)
	d := image("CUDA_VERSION=13.0.2", "NVIDIA_REQUIRE_CUDA="+req130)
	ev := Evaluate(tab, fromImage(d), "pool", host("535.104.05", "9.0:nvidia"))
	if got := strings.Join(ev.Reasons, "\n"); !strings.Contains(got, "ships no /usr/local/cuda*/compat/libcuda.so.*") || !strings.Contains(got, "install cuda-compat-13-0") {
		t.Errorf("reasons:\n%s", got)
	}
	ev = Evaluate(tab, d, "pool", host("535.104.05", "9.0:nvidia"))
	if got := strings.Join(ev.Reasons, "\n"); ev.Verdict != CompatibleForwardCompat || !strings.Contains(got, "only the environment is known") {
		t.Errorf("env only: %s\n%s", ev.Verdict, got)
	}
}

// TestWindowsMinorVersionFloors: the Windows floors of minor-version
// compatibility, row by row (NVIDIA's release notes: 452.39 for 11.x,
// 528.33 for 12.x): a CUDA 12.4 runtime runs on Windows driver 528.33.
func TestWindowsMinorVersionFloors(t *testing.T) {
	tab := table(t)
	win := func(drv string) HostFacts { h := host(drv, "8.9:geforce"); h.OS = "windows"; return h }
	for _, tc := range []struct {
		cuda, driver string
		want         Verdict
	}{
		{"12.4", "528.33", Compatible},
		{"12.4", "528.24", Incompatible},
		{"12.9", "528.33", Compatible},
		{"11.8", "452.39", Compatible},
		{"11.8", "452.06", Incompatible},
		{"12.0", "527.41", Compatible}, // 12.0 GA's own toolkit driver
	} {
		ev := Evaluate(tab, declared(tc.cuda), "win", win(tc.driver))
		if ev.Verdict != tc.want {
			t.Errorf("CUDA %s on Windows driver %s: %s, want %s\n%s", tc.cuda, tc.driver, ev.Verdict, tc.want, strings.Join(ev.Reasons, "\n"))
		}
	}
}

// TestForwardCompatUnknownBrand: NVML reports the brand "unknown" for new
// data-center parts on older builds (GH200); forward compatibility is then
// judged from the GPU's name and compute capability, and the reasons say the
// brand was inferred. A consumer name is never inferred to be data-center.
func TestForwardCompatUnknownBrand(t *testing.T) {
	tab := table(t)
	img := image("CUDA_VERSION=13.0.2", "NVIDIA_REQUIRE_CUDA="+req130)
	withCompat := fromImage(img)
	withCompat.Merge(ExtractFile("/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", nil))
	hostFC := func(h HostFacts) HostFacts {
		h.ForwardCompat = &ForwardCompat{CUDA: "13.0", SupportedBranches: []int{535, 550, 570}}
		return h
	}
	for _, tc := range []struct {
		name     string
		d        Declared
		gpu      GPU
		fc       bool
		want     Verdict
		inferred bool
	}{
		{"GH200 unknown brand, image compat libs", withCompat, GPU{Name: "NVIDIA GH200 480GB", ComputeCapability: "9.0"}, false, CompatibleForwardCompat, true},
		{"GH200 unknown brand, requirement alternative", img, GPU{Name: "NVIDIA GH200 480GB", ComputeCapability: "9.0"}, false, CompatibleForwardCompat, true},
		{"H100 unknown brand, host cuda-compat", declared("13.0"), GPU{Name: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0"}, true, CompatibleForwardCompat, true},
		{"A100-SXM4 unknown brand", withCompat, GPU{Name: "NVIDIA A100-SXM4-80GB", ComputeCapability: "8.0"}, false, CompatibleForwardCompat, true},
		{"L40S unknown brand (CC shared with consumer parts)", withCompat, GPU{Name: "NVIDIA L40S", ComputeCapability: "8.9"}, false, CompatibleForwardCompat, true},
		{"B200 unknown brand", declared("13.0"), GPU{Name: "NVIDIA B200", ComputeCapability: "10.0"}, true, CompatibleForwardCompat, true},
		{"no name, data-center-only CC 9.0", declared("13.0"), GPU{ComputeCapability: "9.0"}, true, CompatibleForwardCompat, true},
		{"GeForce unknown brand: not inferred", withCompat, GPU{Name: "NVIDIA GeForce RTX 4090", ComputeCapability: "8.9"}, false, Incompatible, false},
		{"RTX unknown brand: not inferred", declared("13.0"), GPU{Name: "NVIDIA RTX A6000", ComputeCapability: "8.6"}, true, Incompatible, false},
		{"no name, CC shared with consumer parts: not inferred", declared("13.0"), GPU{ComputeCapability: "8.9"}, true, Incompatible, false},
		{"geforce brand with a data-center CC stays geforce", declared("13.0"), GPU{Name: "NVIDIA H100", Brand: "geforce", ComputeCapability: "9.0"}, true, Incompatible, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := HostFacts{DriverVersion: "535.104.05", GPUs: []GPU{tc.gpu}}
			if tc.fc {
				h = hostFC(h)
			}
			if err := h.Normalize(); err != nil {
				t.Fatal(err)
			}
			ev := Evaluate(tab, tc.d, "pool", h)
			reasons := strings.Join(ev.Reasons, "\n")
			if ev.Verdict != tc.want {
				t.Errorf("verdict %s, want %s\n%s", ev.Verdict, tc.want, reasons)
			}
			if got := strings.Contains(reasons, "inferred as data-center"); got != tc.inferred {
				t.Errorf("reasons say inferred: %v, want %v\n%s", got, tc.inferred, reasons)
			}
			if tc.want == CompatibleForwardCompat {
				for _, p := range ev.Problems {
					if p.Rule == RuleForwardCompatRequired && !strings.Contains(p.Reason, "inferred") {
						t.Errorf("finding does not say the brand was inferred: %s", p.Reason)
					}
				}
			}
		})
	}
}
