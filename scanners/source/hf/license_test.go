//go:build !mlwarden_sbatch

package hf_test

import (
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/hf"
)

// TestHubCardData: a Hub repository's cardData and gate, as the loopback
// Hub's revision answer gives them, become the target's properties, the
// licence of its model components and the models check's licence rules.
func TestHubCardData(t *testing.T) {
	model := safetensors(t, 4096)
	files := []hubtest.File{
		hubtest.Bytes("config.json", []byte(`{"model_type":"llama"}`), false),
		hubtest.Bytes("model.safetensors", model, true),
	}
	srv := hubtest.New(t)
	commit := srv.AddFiles("org/plain", files)
	srv.Add(&hubtest.Repo{ID: "org/gated", Gated: true, GateMode: "manual", Refs: map[string]string{"main": commit},
		Commits: map[string][]hubtest.File{commit: files},
		CardData: map[string]any{"license": "cc-by-nc-4.0", "extra_gated_prompt": "You agree to the terms.",
			"extra_gated_fields": map[string]any{"Affiliation": "text", "Country": "country"}}})
	srv.Add(&hubtest.Repo{ID: "org/other", Refs: map[string]string{"main": commit}, Commits: map[string][]hubtest.File{commit: files},
		CardData: map[string]any{"license": []string{"other"}, "license_name": "acme-model-license", "license_link": "LICENSE"}})
	o := hf.Options{Endpoint: srv.Endpoint(), Getenv: env("HF_TOKEN", srv.Token("model/org/gated", "model/org/plain", "model/org/other"))}
	gated, plain, other := "hf:org/gated@"+commit, "hf:org/plain@"+commit, "hf:org/other@"+commit
	res := run(t, o, []string{"models"}, gated, plain, other)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	tg := target(res, gated)
	for k, v := range map[string]string{"hub.license": "cc-by-nc-4.0", "hub.gated": "manual", "hub.gate_fields": "Affiliation, Country", "hub.gate_prompt": "You agree to the terms."} {
		if tg.Properties[k] != v {
			t.Errorf("gated target property %s = %q, want %q", k, tg.Properties[k], v)
		}
	}
	if p := target(res, plain).Properties; len(p) != 0 {
		t.Errorf("plain target has properties %v", p)
	}
	lic := map[string]string{}
	for _, c := range res.Components {
		if c.Kind == scanners.ComponentModel {
			lic[c.Target] = c.License
		}
	}
	for name, want := range map[string]string{gated: "CC-BY-NC-4.0", plain: "", other: "LicenseRef-acme-model-license"} {
		if lic[name] != want {
			t.Errorf("%s: model licence %q, want %q", name, lic[name], want)
		}
	}
	rules := func(name string) string {
		var ids []string
		for _, f := range findings(res, name) {
			if strings.HasPrefix(f.RuleID, "models/license") || f.RuleID == "models/gated" || f.RuleID == "models/card-missing" {
				ids = append(ids, f.RuleID)
			}
		}
		return strings.Join(ids, " ")
	}
	for name, want := range map[string]string{
		gated: "models/gated models/card-missing models/license-restricted",
		plain: "models/card-missing models/license-unknown",
		other: "models/card-missing",
	} {
		if got := rules(name); got != want {
			t.Errorf("%s: findings %q, want %q", name, got, want)
		}
	}
	for _, f := range findings(res, gated) {
		if f.RuleID == "models/gated" && !strings.Contains(f.Message, "approved") {
			t.Errorf("gated finding does not say what the gate requires: %s", f.Message)
		}
	}
}
