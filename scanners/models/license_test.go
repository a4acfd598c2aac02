package models

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// st is a small valid safetensors file with the given __metadata__ JSON
// (empty: none).
func st(meta string) []byte {
	h := `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	if meta != "" {
		h = `{"__metadata__":` + meta + `,"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	}
	return safetensorsFile(h, 0, 4)
}

func card(front string) []byte { return []byte("---\n" + front + "\n---\n# A model\n") }

// runLicense scans files as a directory target and returns the licence
// rules' findings and the model components.
func runLicense(t *testing.T, files map[string][]byte) ([]scanners.Finding, []scanners.Component) {
	t.Helper()
	res := scannertest.Run(t, scannertest.Source("mem", scannertest.MapFS(files)), New(), readsAll{})
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	var fs []scanners.Finding
	for _, f := range res.Findings {
		switch f.RuleID {
		case "models/license-unknown", "models/license-restricted", "models/card-missing", "models/gated":
			fs = append(fs, f)
		}
	}
	var cs []scanners.Component
	for _, c := range res.Components {
		if c.Kind == scanners.ComponentModel {
			cs = append(cs, c)
		}
	}
	return fs, cs
}

// readsAll stands for the checks that read every small text file (secrets),
// which the card and config files ride along with.
type readsAll struct{}

func (readsAll) Check() string                         { return "all" }
func (readsAll) Rules() []scanners.Rule                { return nil }
func (readsAll) Wants(*scanners.Artifact, []byte) bool { return true }
func (readsAll) Scan(context.Context, *scanners.Artifact, scanners.Content) ([]scanners.Finding, error) {
	return nil, nil
}

func licRules(fs []scanners.Finding) string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, strings.TrimPrefix(f.RuleID, "models/")+"@"+f.Path)
	}
	return strings.Join(ids, " ")
}

func TestLicenseSources(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string][]byte
		want  map[string]string // model path → licence
		rules string
	}{
		{"card beside", map[string][]byte{
			"m/README.md": card("license: apache-2.0"), "m/config.json": []byte("{}"), "m/model.safetensors": st(""),
		}, map[string]string{"m/model.safetensors": "Apache-2.0"}, ""},
		{"card above", map[string][]byte{
			"README.md": card("license: mit"), "sub/model.safetensors": st(""),
		}, map[string]string{"sub/model.safetensors": "MIT"}, ""},
		{"card other", map[string][]byte{
			"README.md": card("license: other\nlicense_name: acme-model\nlicense_link: LICENSE"), "model.safetensors": st(""),
		}, map[string]string{"model.safetensors": "LicenseRef-acme-model"}, ""},
		{"safetensors metadata", map[string][]byte{
			"model.safetensors": st(`{"license":"cc-by-4.0","format":"pt"}`),
		}, map[string]string{"model.safetensors": "CC-BY-4.0"}, ""},
		{"gguf metadata wins over card", map[string][]byte{
			"README.md":  card("license: apache-2.0"),
			"m.gguf":     ggufFile([][2]string{{"general.license", "llama3"}}, []uint64{4}),
			"other.gguf": ggufFile([][2]string{{"general.name", "x"}}, []uint64{4}),
		}, map[string]string{"m.gguf": "LicenseRef-hf-llama3", "other.gguf": "Apache-2.0"}, ""},
		{"no licence", map[string][]byte{
			"README.md": []byte("# no metadata\n"), "model.safetensors": st(""),
		}, map[string]string{"model.safetensors": ""}, "license-unknown@model.safetensors"},
		{"garbage licence", map[string][]byte{
			"model.safetensors": st(`{"license":"see the LICENSE file"}`),
		}, map[string]string{"model.safetensors": ""}, "license-unknown@model.safetensors"},
		{"unreadable card", map[string][]byte{
			"README.md": []byte("---\nlicense: [mit\n---\n"), "model.safetensors": st(""),
		}, map[string]string{"model.safetensors": ""}, "license-unknown@model.safetensors"},
		{"restricted", map[string][]byte{
			"README.md": card("license: cc-by-nc-4.0"), "a.safetensors": st(""), "b.safetensors": st(""),
		}, map[string]string{"a.safetensors": "CC-BY-NC-4.0", "b.safetensors": "CC-BY-NC-4.0"}, "license-restricted@README.md"},
		{"restricted in metadata", map[string][]byte{
			"README.md": card("license: mit"), "x.safetensors": st(`{"license":"CC-BY-NC-SA-4.0"}`),
		}, map[string]string{"x.safetensors": "CC-BY-NC-SA-4.0"}, "license-restricted@x.safetensors"},
		{"free alternative", map[string][]byte{
			"README.md": card("license: MIT OR CC-BY-NC-4.0"), "x.safetensors": st(""),
		}, map[string]string{"x.safetensors": "MIT OR CC-BY-NC-4.0"}, ""},
		{"llama is not restricted", map[string][]byte{
			"README.md": card("license: llama3.1"), "x.safetensors": st(""),
		}, map[string]string{"x.safetensors": "LicenseRef-hf-llama3.1"}, ""},
		{"card missing", map[string][]byte{
			"m/config.json": []byte("{}"), "m/model.safetensors": st(`{"license":"mit"}`),
		}, map[string]string{"m/model.safetensors": "MIT"}, "card-missing@m/model.safetensors"},
		{"stray file is no model directory", map[string][]byte{
			"tests/data/tiny.safetensors": st(`{"license":"mit"}`), "tests/config.json": []byte("{}"),
		}, map[string]string{"tests/data/tiny.safetensors": "MIT"}, ""},
		{"card without licence still a card", map[string][]byte{
			"m/README.md": []byte("# card\n"), "m/config.json": []byte("{}"), "m/model.safetensors": st(`{"license":"mit"}`),
		}, map[string]string{"m/model.safetensors": "MIT"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, cs := runLicense(t, c.files)
			if got := licRules(fs); got != c.rules {
				t.Errorf("findings %q, want %q", got, c.rules)
				for _, f := range fs {
					t.Log(f.Message)
				}
			}
			got := map[string]string{}
			for _, m := range cs {
				got[m.Path] = m.License
				if m.License != "" && m.Properties["license-source"] == "" {
					t.Errorf("%s: licence without a source", m.Path)
				}
			}
			for p, want := range c.want {
				if l, ok := got[p]; !ok || l != want {
					t.Errorf("%s: licence %q (component %v), want %q", p, l, ok, want)
				}
			}
		})
	}
}

// hubTarget is a source of one Hub target with the given properties and
// files, for the rules that read the target's card data.
type hubTarget struct {
	t     scanners.Target
	files map[string][]byte
}

func (h *hubTarget) Target() scanners.Target { return h.t }
func (h *hubTarget) Walk(ctx context.Context, sink scanners.Sink) error {
	src := scannertest.Source(h.t.Name, scannertest.MapFS(h.files))
	return src.Walk(ctx, kindSink{sink})
}

// kindSink hands artifacts on as the Hub target's.
type kindSink struct{ scanners.Sink }

func (k kindSink) Artifact(a *scanners.Artifact, r io.Reader) error {
	a.TargetKind = scanners.KindHub
	return k.Sink.Artifact(a, r)
}

func TestLicenseHubTarget(t *testing.T) {
	for _, c := range []struct {
		name  string
		props map[string]string
		files map[string][]byte
		lic   string
		rules string
		msg   string
	}{
		{"card data", map[string]string{"hub.license": "gemma"}, map[string][]byte{"model.safetensors": st("")},
			"LicenseRef-hf-gemma", "card-missing@model.safetensors", ""},
		{"card data other", map[string]string{"hub.license": "other", "hub.license_name": "acme"},
			map[string][]byte{"README.md": card("x: y"), "model.safetensors": st("")}, "LicenseRef-acme", "", ""},
		{"gated manual", map[string]string{"hub.license": "llama3", "hub.gated": "manual", "hub.gate_fields": "Affiliation, Country", "hub.gate_prompt": "Accept"},
			map[string][]byte{"README.md": card("license: llama3"), "model.safetensors": st("")}, "LicenseRef-hf-llama3", "gated@README.md", "Affiliation, Country"},
		{"not gated", nil, map[string][]byte{"README.md": card("license: mit"), "model.safetensors": st("")}, "MIT", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &hubTarget{t: scanners.Target{Name: "hf:org/m", Kind: scanners.KindHub, Properties: c.props}, files: c.files}
			res := scannertest.Run(t, src, New(), readsAll{})
			var fs []scanners.Finding
			for _, f := range res.Findings {
				if strings.HasPrefix(f.RuleID, "models/license") || f.RuleID == "models/card-missing" || f.RuleID == "models/gated" {
					fs = append(fs, f)
				}
			}
			if got := licRules(fs); got != c.rules {
				t.Errorf("findings %q, want %q", got, c.rules)
			}
			if c.msg != "" && (len(fs) == 0 || !strings.Contains(fs[len(fs)-1].Message, c.msg)) {
				t.Errorf("message does not say %q: %+v", c.msg, fs)
			}
			for _, m := range res.Components {
				if m.Kind == scanners.ComponentModel && m.License != c.lic {
					t.Errorf("%s: licence %q, want %q", m.Path, m.License, c.lic)
				}
			}
		})
	}
}

// TestCardRidesAlong: with the models check alone, a config.json and a
// README.md without metadata are not read for it, so no card-missing is
// reported from half the facts; a card with metadata is read.
func TestCardRidesAlong(t *testing.T) {
	files := scannertest.MapFS(map[string][]byte{
		"m/config.json": []byte("{}"), "m/model.safetensors": st(""), "n/README.md": card("license: mit"), "n/x.safetensors": st(""),
	})
	res := scannertest.Run(t, scannertest.Source("mem", files), New())
	for _, f := range res.Findings {
		if f.RuleID == "models/card-missing" {
			t.Errorf("card-missing without another check: %s", f.Message)
		}
	}
	for _, c := range res.Components {
		if c.Path == "n/x.safetensors" && c.License != "MIT" {
			t.Errorf("card with metadata not read: %+v", c)
		}
	}
}

// TestLicenseStateRoundTrip: facts kept with an artifact's result come back
// through RestoreState as if the artifact was scanned again.
func TestLicenseStateRoundTrip(t *testing.T) {
	s := New()
	var k scanners.StateKeeper = s
	if err := k.RestoreState(context.Background(), "t", []byte(`{"a":{"path":"README.md"},"what":"card","license":"MIT","has_meta":true}`)); err != nil {
		t.Fatal(err)
	}
	if f := s.takeFacts("t"); len(f) != 1 || f[0].License != "MIT" {
		t.Errorf("facts %+v", f)
	}
	if err := k.RestoreState(context.Background(), "t", []byte("{")); err == nil {
		t.Error("bad state accepted")
	}
}
