package rules

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestDefaultCUDA(t *testing.T) {
	tb, err := DefaultCUDA()
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Toolkits) < 50 || len(tb.Branches) < 20 || len(tb.MinorCompat) != 3 || len(tb.Arch) < 8 || len(tb.Forward.Packages) < 2 {
		t.Fatalf("table too small: %d toolkits, %d branches", len(tb.Toolkits), len(tb.Branches))
	}
	if tb.Toolkits[0].CUDA != "13.4.1" || tb.Toolkits[len(tb.Toolkits)-1].CUDA != "10.0.130" {
		t.Errorf("order: first %s last %s", tb.Toolkits[0].CUDA, tb.Toolkits[len(tb.Toolkits)-1].CUDA)
	}
	seen := map[string]bool{}
	for _, r := range tb.Toolkits {
		if seen[r.CUDA] {
			t.Errorf("toolkit %s listed twice", r.CUDA)
		}
		seen[r.CUDA] = true
		if !strings.HasPrefix(r.Source, "https://docs.nvidia.com/") {
			t.Errorf("toolkit %s: source %q", r.CUDA, r.Source)
		}
	}
	// Every major from 10 to 13 is covered.
	for _, maj := range []string{"10.", "11.", "12.", "13."} {
		if !seen[maj+"0.0"] && !seen[maj+"0.130"] && !seen[maj+"0.2"] {
			t.Errorf("no %sx GA row", maj)
		}
	}
}

func TestLoadCUDAOverride(t *testing.T) {
	good := "version: 1\ntoolkits:\n  - {cuda: \"12.4.0\", linux: \"550.54.14\", source: \"https://example.invalid/a\"}\n" +
		"minor_compat:\n  - {major: 12, linux: \"525.60.13\", source: \"https://example.invalid/b\"}\n" +
		"branches:\n  - {branch: 550, cuda: \"12.4\", source: \"https://example.invalid/c\"}\n"
	if _, err := LoadCUDA(fstest.MapFS{CUDAFile: {Data: []byte(good)}}); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"no source":   strings.Replace(good, `, source: "https://example.invalid/a"`, "", 1),
		"bad version": strings.Replace(good, `linux: "550.54.14"`, `linux: "550.x"`, 1),
		"version 2":   strings.Replace(good, "version: 1", "version: 2", 1),
		"unknown key": good + "extra: 1\n",
		"empty":       "version: 1\n",
	} {
		if _, err := ParseCUDA([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := LoadCUDA(fstest.MapFS{}); err == nil {
		t.Error("missing file: no error")
	}
}
