package rules

import (
	"strings"
	"testing"
	"testing/fstest"
)

// boundary is one affected package of one row: the last version it
// affects and the first it does not (the fixed version), as a release
// would name them. Every row of the table has at least one.
type boundary struct {
	id, pkg      string
	last, first  string
	belowIntro   string // a version below the range's start ("" when it starts at 0)
	firstInRange string // the first affected version, when the range has a start
}

var boundaries = []boundary{
	{id: "CVE-2024-0132", pkg: PkgContainerToolkit, last: "1.16.1-1", first: "1.16.2-1"},
	{id: "CVE-2024-0132", pkg: PkgGPUOperator, last: "24.6.1", first: "24.6.2"},
	{id: "CVE-2024-0133", pkg: PkgContainerToolkit, last: "1.16.1", first: "1.16.2"},
	{id: "CVE-2024-0133", pkg: PkgGPUOperator, last: "24.6.1", first: "24.6.2"},
	{id: "CVE-2024-0134", pkg: PkgContainerToolkit, last: "1.16.2-1", first: "1.17.0-1"},
	{id: "CVE-2024-0134", pkg: PkgGPUOperator, last: "24.6.2", first: "24.9.0"},
	{id: "CVE-2024-0135", pkg: PkgContainerToolkit, last: "1.17.0-1", first: "1.17.1-1"},
	{id: "CVE-2024-0135", pkg: PkgGPUOperator, last: "24.9.0", first: "24.9.1"},
	{id: "CVE-2024-0136", pkg: PkgContainerToolkit, last: "1.17.0", first: "1.17.1"},
	{id: "CVE-2024-0136", pkg: PkgGPUOperator, last: "24.9.0", first: "24.9.1"},
	{id: "CVE-2024-0137", pkg: PkgContainerToolkit, last: "1.17.0", first: "1.17.1"},
	{id: "CVE-2024-0137", pkg: PkgGPUOperator, last: "24.9.0", first: "24.9.1"},
	{id: "CVE-2025-23359", pkg: PkgContainerToolkit, last: "1.17.3-1", first: "1.17.4-1"},
	{id: "CVE-2025-23359", pkg: PkgGPUOperator, last: "24.9.1", first: "24.9.2"},
	{id: "CVE-2025-23266", pkg: PkgContainerToolkit, last: "1.17.7-1", first: "1.17.8-1"},
	{id: "CVE-2025-23266", pkg: PkgContainerToolkit, last: "1.17.8~rc.1-1", first: "1.17.8"},
	{id: "CVE-2025-23266", pkg: PkgGPUOperator, last: "25.3.1", first: "25.3.2"},
	{id: "CVE-2025-23266", pkg: PkgDevicePlugin, last: "0.17.2", first: "0.17.3"},
	{id: "CVE-2025-23266", pkg: PkgMIGManager, last: "0.12.1", first: "0.12.2"},
	{id: "CVE-2025-23267", pkg: PkgContainerToolkit, last: "1.17.7", first: "1.17.8"},
	{id: "CVE-2025-23267", pkg: PkgGPUOperator, last: "25.3.1", first: "25.3.2"},
	{id: "CVE-2025-23267", pkg: PkgDevicePlugin, last: "0.17.2", first: "0.17.3"},
	{id: "CVE-2025-23267", pkg: PkgMIGManager, last: "0.12.1", first: "0.12.2"},
	{id: "CVE-2026-24260", pkg: PkgContainerToolkit, last: "1.19.0-1", first: "1.19.1-1"},
	{id: "CVE-2026-24260", pkg: PkgGPUOperator, last: "26.3.1", first: "26.3.2"},

	// Driver bulletins: per branch, the release before the fix and the fix.
	{id: "NVIDIA-5520", pkg: PkgDriver, last: "535.154.05", first: "535.161.07", belowIntro: "530.41.03", firstInRange: "535.43.02"},
	{id: "NVIDIA-5520", pkg: PkgDriver, last: "550.40.07", first: "550.54.14", belowIntro: "545.29.06", firstInRange: "550.40.07"},
	{id: "NVIDIA-5551", pkg: PkgDriver, last: "535.161.08", first: "535.183.01"},
	{id: "NVIDIA-5551", pkg: PkgDriver, last: "550.54.15", first: "550.90.07"},
	{id: "NVIDIA-5586", pkg: PkgDriver, last: "535.183.06", first: "535.216.01"},
	{id: "NVIDIA-5586", pkg: PkgDriver, last: "550.90.12", first: "550.127.05"},
	{id: "NVIDIA-5586", pkg: PkgDriver, last: "565.57.0", first: "565.57.01"},
	{id: "NVIDIA-5614", pkg: PkgDriver, last: "535.216.03", first: "535.230.02"},
	{id: "NVIDIA-5614", pkg: PkgDriver, last: "550.127.08", first: "550.144.03"},
	{id: "NVIDIA-5614", pkg: PkgDriver, last: "570.86.10", first: "570.86.15"},
	{id: "NVIDIA-5630", pkg: PkgDriver, last: "535.230.02", first: "535.247.01"},
	{id: "NVIDIA-5630", pkg: PkgDriver, last: "550.144.03", first: "550.163.01"},
	{id: "NVIDIA-5630", pkg: PkgDriver, last: "570.124.06", first: "570.133.07"},
	{id: "NVIDIA-5630", pkg: PkgDriver, last: "575.51.01", first: "575.51.02"},
	{id: "NVIDIA-5670", pkg: PkgDriver, last: "535.247.01", first: "535.261.03"},
	{id: "NVIDIA-5670", pkg: PkgDriver, last: "570.158.01", first: "570.172.08"},
	{id: "NVIDIA-5703", pkg: PkgDriver, last: "535.261.03", first: "535.274.02"},
	{id: "NVIDIA-5703", pkg: PkgDriver, last: "570.172.08", first: "570.195.03"},
	{id: "NVIDIA-5703", pkg: PkgDriver, last: "580.82.07", first: "580.95.05"},
	{id: "NVIDIA-5747", pkg: PkgDriver, last: "535.274.02", first: "535.288.01"},
	{id: "NVIDIA-5747", pkg: PkgDriver, last: "570.195.03", first: "570.211.01"},
	{id: "NVIDIA-5747", pkg: PkgDriver, last: "580.105.08", first: "580.126.09"},
	{id: "NVIDIA-5747", pkg: PkgDriver, last: "590.44.01", first: "590.48.01"},
	{id: "NVIDIA-5821", pkg: PkgDriver, last: "535.288.01", first: "535.309.01"},
	{id: "NVIDIA-5821", pkg: PkgDriver, last: "580.126.09", first: "580.159.03"},
	{id: "NVIDIA-5821", pkg: PkgDriver, last: "595.58.03", first: "595.71.05"},

	{id: "CVE-2025-32434", pkg: "torch", last: "2.5.1+cu124", first: "2.6.0"},
	{id: "CVE-2025-32434", pkg: "torch", last: "2.6.0rc1", first: "2.6.0+cpu"},
	{id: "CVE-2026-24747", pkg: "torch", last: "2.9.1", first: "2.10.0"},
	{id: "CVE-2023-6730", pkg: "transformers", last: "4.35.2", first: "4.36.0"},
	{id: "CVE-2023-7018", pkg: "transformers", last: "4.35.2", first: "4.36.0"},
	{id: "CVE-2024-3568", pkg: "transformers", last: "4.37.2", first: "4.38.0"},
	{id: "CVE-2024-11392", pkg: "transformers", last: "4.47.1", first: "4.48.0"},
	{id: "CVE-2025-32444", pkg: "vllm", last: "0.8.4", first: "0.8.5", belowIntro: "0.6.4.post1", firstInRange: "0.6.5"},
	{id: "CVE-2026-27893", pkg: "vllm", last: "0.17.1", first: "0.18.0", belowIntro: "0.10.0", firstInRange: "0.10.1"},
	{id: "CVE-2025-62593", pkg: "ray", last: "2.51.1", first: "2.52.0"},
	{id: "CVE-2023-1177", pkg: "mlflow", last: "2.2.0", first: "2.2.1"},
	{id: "CVE-2023-2780", pkg: "mlflow", last: "2.3.0", first: "2.3.1"},
	{id: "CVE-2023-3765", pkg: "mlflow", last: "2.4.2", first: "2.5.0"},
	{id: "CVE-2023-6753", pkg: "mlflow", last: "2.9.1", first: "2.9.2"},
	{id: "CVE-2023-6976", pkg: "mlflow", last: "2.9.1", first: "2.9.2"},
	{id: "CVE-2026-49119", pkg: "gradio", last: "6.15.2", first: "6.16.0"},
}

func TestAdvisoryBoundaries(t *testing.T) {
	tb, err := DefaultAdvisories()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Advisory{}
	for _, a := range tb.Advisories {
		byID[a.ID] = a
	}
	covered := map[string]map[string]bool{}
	for _, b := range boundaries {
		a, ok := byID[b.id]
		if !ok {
			t.Errorf("%s: not in the table", b.id)
			continue
		}
		var af *Affected
		for i := range a.Affected {
			if a.Affected[i].Package == b.pkg {
				af = &a.Affected[i]
			}
		}
		if af == nil {
			t.Errorf("%s: no affected package %s", b.id, b.pkg)
			continue
		}
		if covered[b.id] == nil {
			covered[b.id] = map[string]bool{}
		}
		covered[b.id][b.pkg] = true
		for _, c := range []struct {
			v    string
			want bool
		}{{b.last, true}, {b.first, false}, {b.belowIntro, false}, {b.firstInRange, true}} {
			if c.v == "" {
				continue
			}
			_, got, err := af.Match(c.v)
			if err != nil || got != c.want {
				t.Errorf("%s %s %s: affected=%v (err %v), want %v", b.id, b.pkg, c.v, got, err, c.want)
			}
		}
	}
	// Every row and every affected package of it has a boundary case.
	for _, a := range tb.Advisories {
		for _, af := range a.Affected {
			if !covered[a.ID][af.Package] {
				t.Errorf("%s %s: no boundary case in this test", a.ID, af.Package)
			}
		}
	}
}

func TestDefaultAdvisoriesRows(t *testing.T) {
	tb, err := DefaultAdvisories()
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Advisories) < 30 {
		t.Fatalf("only %d rows", len(tb.Advisories))
	}
	for _, a := range tb.Advisories {
		if a.Status != StatusConfirmed && !strings.Contains(a.Note, " ") {
			t.Errorf("%s: status %s without a note", a.ID, a.Status)
		}
		for _, af := range a.Affected {
			for _, r := range af.Ranges {
				if r.Fixed == "" {
					t.Errorf("%s %s: a range without a fixed version", a.ID, af.Package)
				}
			}
		}
	}
}

func TestParseAdvisoriesRejects(t *testing.T) {
	row := func(s string) string { return "version: 1\nadvisories:\n  - " + s + "\n" }
	ok := `{id: CVE-2099-0001, severity: high, impact: x, source: "https://example.invalid/a", affected: [{ecosystem: PyPI, package: torch, ranges: [{fixed: "2.6.0"}]}]}`
	if _, err := ParseAdvisories([]byte(row(ok))); err != nil {
		t.Fatalf("good row: %v", err)
	}
	for name, bad := range map[string]string{
		"http source":    strings.Replace(ok, "https://", "http://", 1),
		"no impact":      strings.Replace(ok, "impact: x, ", "", 1),
		"bad severity":   strings.Replace(ok, "high", "severe", 1),
		"bad version":    strings.Replace(ok, `"2.6.0"`, `"not a version"`, 1),
		"unnormalized":   strings.Replace(ok, "torch", "Torch_Vision", 1),
		"bad ecosystem":  strings.Replace(ok, "PyPI", "npm", 1),
		"unknown nvidia": strings.Replace(strings.Replace(ok, "PyPI", "NVIDIA", 1), "torch", "cuda-toolkit", 1),
		"no ranges":      strings.Replace(ok, `ranges: [{fixed: "2.6.0"}]`, "ranges: []", 1),
		"fixed and last": strings.Replace(ok, `{fixed: "2.6.0"}`, `{fixed: "2.6.0", last_affected: "2.5.0"}`, 1),
		"empty range":    strings.Replace(ok, `{fixed: "2.6.0"}`, `{introduced: "2.6.0", fixed: "2.6.0"}`, 1),
		"unknown key":    strings.Replace(ok, "impact: x", "impact: x, cwe: 79", 1),
		"bad id":         strings.Replace(ok, "CVE-2099-0001", "not an id", 1),
		"status no note": strings.Replace(ok, "impact: x", "impact: x, status: disputed", 1),
		"bad status":     strings.Replace(ok, "impact: x", "impact: x, status: maybe, note: y z", 1),
		"bad date":       strings.Replace(ok, "impact: x", "impact: x, published: yesterday", 1),
	} {
		if _, err := ParseAdvisories([]byte(row(bad))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseAdvisories([]byte(row(ok) + "  - " + ok + "\n")); err == nil {
		t.Error("duplicate id accepted")
	}
	if _, err := ParseAdvisories([]byte("version: 2\nadvisories: []\n")); err == nil {
		t.Error("version 2 accepted")
	}
}

func TestLoadAdvisoriesAndMerge(t *testing.T) {
	fsys := fstest.MapFS{AdvisoriesFile: {Data: []byte("version: 1\nadvisories:\n" +
		"  - {id: CVE-2025-32434, severity: low, impact: overridden, source: \"https://example.invalid/a\", affected: [{ecosystem: PyPI, package: torch, ranges: [{fixed: \"2.0.0\"}]}]}\n" +
		"  - {id: CVE-2099-0002, severity: medium, impact: added, source: \"https://example.invalid/b\", affected: [{ecosystem: PyPI, package: numpy, ranges: [{introduced: \"1.0\", last_affected: \"1.26.4\"}]}]}\n")}}
	extra, err := LoadAdvisories(fsys)
	if err != nil {
		t.Fatal(err)
	}
	base, err := DefaultAdvisories()
	if err != nil {
		t.Fatal(err)
	}
	m := base.Merge(extra)
	if len(m.Advisories) != len(base.Advisories)+1 {
		t.Fatalf("merged %d rows from %d", len(m.Advisories), len(base.Advisories))
	}
	n := 0
	for _, a := range m.Advisories {
		if a.ID == "CVE-2025-32434" {
			n++
			if a.Impact != "overridden" {
				t.Errorf("not overridden: %+v", a)
			}
		}
		if a.ID == "CVE-2099-0002" {
			_, hit, _ := a.Affected[0].Match("1.26.4")
			_, miss, _ := a.Affected[0].Match("2.0.0")
			if !hit || miss {
				t.Errorf("last_affected: 1.26.4 %v, 2.0.0 %v", hit, miss)
			}
		}
	}
	if n != 1 {
		t.Errorf("CVE-2025-32434 %d times", n)
	}
	if _, err := LoadAdvisories(fstest.MapFS{}); err == nil {
		t.Error("missing file accepted")
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		eco, a, b string
		want      int
	}{
		{EcosystemNVIDIA, "1.17.5~rc.1-1", "1.17.5", -1},
		{EcosystemNVIDIA, "1.17.5-1", "1.17.5", 1},
		{EcosystemNVIDIA, "1:1.0", "2.0", 1},
		{EcosystemNVIDIA, "535.161.07", "535.161.7", 0},
		{EcosystemNVIDIA, "535", "535.43.02", -1},
		{EcosystemNVIDIA, "550.54.15", "550.54.14", 1},
		{EcosystemNVIDIA, "24.9.2", "24.10.0", -1},
		{EcosystemPyPI, "2.6.0rc1", "2.6.0", -1},
		{EcosystemPyPI, "2.5.1+cu124", "2.6.0", -1},
		{EcosystemPyPI, "2.6.0+cu124", "2.6.0", 1},
		{EcosystemPyPI, "1!0.1", "2.0", 1},
		{EcosystemPyPI, "0.6.4.post1", "0.6.5", -1},
	} {
		got, err := CompareVersions(c.eco, c.a, c.b)
		if err != nil || got != c.want {
			t.Errorf("%s %s vs %s: %d (%v), want %d", c.eco, c.a, c.b, got, err, c.want)
		}
	}
	for _, c := range []struct{ eco, v string }{
		{EcosystemNVIDIA, "v1.17.3"}, {EcosystemNVIDIA, ""}, {EcosystemNVIDIA, "latest"},
		{EcosystemPyPI, "not.a version"}, {"npm", "1.0.0"}, {EcosystemPyPI, strings.Repeat("1.", 100)},
	} {
		if ValidVersion(c.eco, c.v) {
			t.Errorf("%s %q accepted", c.eco, c.v)
		}
	}
}

func TestNormalizePyPI(t *testing.T) {
	for in, want := range map[string]string{"Jupyter_Server": "jupyter-server", "ray": "ray", "a.-_b": "a-b", " Torch ": "torch"} {
		if got := NormalizePyPI(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// FuzzCompareVersions: the order is antisymmetric and reflexive for every
// pair of versions both ecosystems accept, and never panics.
func FuzzCompareVersions(f *testing.F) {
	for _, s := range [][2]string{{"1.17.5~rc.1-1", "1.17.5"}, {"2.6.0rc1", "2.6.0"}, {"1:1.0-1", "1.0"}, {"535.161.07", "535"}, {"0.6.4.post1", "1!2"}, {"~~", "~"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, eco := range []string{EcosystemNVIDIA, EcosystemPyPI} {
			ab, err1 := CompareVersions(eco, a, b)
			ba, err2 := CompareVersions(eco, b, a)
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("%s: %q vs %q: errors %v / %v", eco, a, b, err1, err2)
			}
			if err1 == nil && ab != -ba {
				t.Fatalf("%s: %q vs %q = %d, reverse %d", eco, a, b, ab, ba)
			}
			if err1 == nil {
				if c, err := CompareVersions(eco, a, a); err != nil || c != 0 {
					t.Fatalf("%s: %q vs itself = %d (%v)", eco, a, c, err)
				}
			}
		}
	})
}
