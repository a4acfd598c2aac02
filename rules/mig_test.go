package rules

import (
	"strings"
	"testing"
)

func TestDefaultMIG(t *testing.T) {
	tb, err := DefaultMIG()
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]*MIGGPU{}
	for i := range tb.GPUs {
		models[tb.GPUs[i].Model] = &tb.GPUs[i]
	}
	for _, c := range []struct {
		model, profile string
		max            int
	}{
		{"A100-40GB", "1g.5gb", 7}, {"A100-40GB", "3g.20gb", 2}, {"A100-40GB", "7g.40gb", 1},
		{"A100-80GB", "1g.20gb", 4}, {"H100-80GB", "3g.40gb", 2}, {"H100-94GB", "3g.47gb", 2},
		{"H200-141GB", "1g.18gb", 7}, {"H200-141GB", "7g.141gb", 1}, {"B200-180GB", "1g.23gb", 7},
	} {
		g := models[c.model]
		if g == nil {
			t.Fatalf("no %s", c.model)
		}
		p, ok := g.Profile(c.profile)
		if !ok || p.Max != c.max {
			t.Errorf("%s %s: %+v", c.model, c.profile, p)
		}
	}
	if _, ok := models["A100-40GB"].Profile("3g.40gb"); ok {
		t.Error("A100-40GB offers 3g.40gb")
	}
	if !strings.Contains(models["B200-180GB"].Note, "unconfirmed") {
		t.Error("B200 row not marked unconfirmed")
	}
	for label, model := range map[string]string{
		"NVIDIA-A100-SXM4-40GB": "A100-40GB", "NVIDIA-A100-SXM4-80GB": "A100-80GB", "NVIDIA-H100-80GB-HBM3": "H100-80GB",
		"NVIDIA-H100-NVL": "H100-94GB", "NVIDIA-H200": "H200-141GB", "NVIDIA-B200": "B200-180GB",
	} {
		for m, g := range models {
			if got := g.IsProduct(label); got != (m == model) {
				t.Errorf("%s is %s: %v", label, m, got)
			}
		}
	}
	if !models["A100-40GB"].HasPCIID("0x20b010de") || models["A100-40GB"].HasPCIID("0x233010DE") {
		t.Error("PCI IDs")
	}
}

func TestParseMIGRejects(t *testing.T) {
	ok := "version: 1\ngpus:\n  - {model: X, source: \"https://example.invalid/\", memory_slices: 8, compute_slices: 7, max_instances: 7, pci_ids: [\"0x20B010DE\"], profiles: [{name: 1g.5gb, compute: 1, size: 1, max: 7, starts: [0, 6]}]}\n"
	if _, err := ParseMIG([]byte(ok)); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"http":         strings.Replace(ok, "https", "http", 1),
		"placement":    strings.Replace(ok, "starts: [0, 6]", "starts: [0, 8]", 1),
		"profile name": strings.Replace(ok, "1g.5gb", "one-g", 1),
		"pci":          strings.Replace(ok, "0x20B010DE", "20B0", 1),
		"no slices":    strings.Replace(ok, "memory_slices: 8", "memory_slices: 0", 1),
		"unknown key":  strings.Replace(ok, "max: 7,", "max: 7, color: red,", 1),
		"version":      strings.Replace(ok, "version: 1", "version: 3", 1),
	} {
		if _, err := ParseMIG([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
