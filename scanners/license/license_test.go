package license

import (
	"slices"
	"strings"
	"testing"

	"github.com/github/go-spdx/v2/spdxexp"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Hub keys that are SPDX identifiers in lower case.
		{"apache-2.0", "Apache-2.0"},
		{"mit", "MIT"},
		{"cc-by-nc-4.0", "CC-BY-NC-4.0"},
		{"cc-by-nc-sa-4.0", "CC-BY-NC-SA-4.0"},
		{"openmdw-1.0", "OpenMDW-1.0"},
		// Hub keys spelled otherwise in SPDX, or not in SPDX.
		{"llama3", "LicenseRef-hf-llama3"},
		{"Llama3.1", "LicenseRef-hf-llama3.1"},
		{"gemma", "LicenseRef-hf-gemma"},
		{"openrail", "LicenseRef-hf-openrail"},
		{"openrail++", "LicenseRef-hf-openrail-pp"},
		{"odbl", "ODbL-1.0"},
		{"gpl-3.0", "GPL-3.0-only"},
		{"agpl-3.0", "AGPL-3.0-only"},
		// SPDX identifiers and expressions.
		{" Apache-2.0 ", "Apache-2.0"},
		{"GPL-2.0", "GPL-2.0-only"},
		{"GPL-2.0-or-later", "GPL-2.0-or-later"},
		{"mit OR apache-2.0", "MIT OR Apache-2.0"},
		{"(MIT AND GPL-2.0) OR BSD-3-Clause", "MIT AND GPL-2.0-only OR BSD-3-Clause"},
		{"mit AND (gpl-2.0 OR bsd-3-clause)", "MIT AND (GPL-2.0-only OR BSD-3-Clause)"},
		{"Apache-2.0 WITH LLVM-exception", "Apache-2.0 WITH LLVM-exception"},
		{"LicenseRef-acme-model", "LicenseRef-acme-model"},
		// Nothing.
		{"", ""},
		{"unknown", ""},
		{"other", ""},
		{"see LICENSE file", ""},
		{"MIT AND", ""},
		{"(((", ""},
		{"\x00\xff", ""},
		{strings.Repeat("MIT AND ", 100) + "MIT", ""},
	} {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestHubKeys checks the Hub table against the SPDX list: an identifier it
// maps to is active in the list, and a key it maps to LicenseRef-hf- is not
// an SPDX identifier.
func TestHubKeys(t *testing.T) {
	for k, id := range hubKeys {
		switch {
		case id == "":
		case strings.HasPrefix(id, "LicenseRef-hf-"):
			if ok, _ := spdxexp.ActiveLicense(k); ok {
				t.Errorf("hub key %q is an SPDX identifier, but maps to %s", k, id)
			}
			if Ref(strings.TrimPrefix(id, "LicenseRef-")) != id {
				t.Errorf("%s is not an SPDX idstring", id)
			}
		default:
			if ok, canon := spdxexp.ActiveLicense(id); !ok || canon != id {
				t.Errorf("hub key %q maps to %q, not an active SPDX identifier", k, id)
			}
		}
	}
}

func TestOtherAndRef(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"acme-model-license", "LicenseRef-acme-model-license"},
		{"Acme Model License v2 (2024)", "LicenseRef-Acme-Model-License-v2-2024"},
		{"apache-2.0", "Apache-2.0"},
		{"llama3", "LicenseRef-hf-llama3"},
		{"  ", ""},
		{"€€€", ""},
	} {
		if got := Other(c.in); got != c.want {
			t.Errorf("Other(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Ref(strings.Repeat("a", 200)); len(got) > len("LicenseRef-")+64 {
		t.Errorf("Ref of a long name: %d bytes", len(got))
	}
}

func TestRestricted(t *testing.T) {
	for _, c := range []struct {
		expr string
		want string // the restricted id, "" for none
	}{
		{"CC-BY-NC-4.0", "CC-BY-NC-4.0"},
		{"CC-BY-NC-SA-3.0-IGO", "CC-BY-NC-SA-3.0-IGO"},
		{"PolyForm-Noncommercial-1.0.0", "PolyForm-Noncommercial-1.0.0"},
		{"LicenseRef-hf-fair-noncommercial-research-license", "LicenseRef-hf-fair-noncommercial-research-license"},
		{"LicenseRef-hf-apple-amlr", "LicenseRef-hf-apple-amlr"},
		{"MIT AND CC-BY-NC-4.0", "CC-BY-NC-4.0"},
		{"CC-BY-NC-4.0 OR CC-BY-NC-SA-4.0", "CC-BY-NC-4.0"},
		{"(MIT AND CC-BY-NC-4.0) OR CC-BY-NC-ND-4.0", "CC-BY-NC-4.0"},
		{"MIT OR CC-BY-NC-4.0", ""},
		{"CC-BY-NC-4.0 OR MIT", ""},
		{"CC-BY-4.0", ""},
		{"CC-BY-SA-4.0", ""},
		{"LicenseRef-hf-llama3", ""},
		{"LicenseRef-hf-gemma", ""},
		{"Apache-2.0", ""},
		{"", ""},
	} {
		id, why, ok := Restricted(c.expr)
		if id != c.want || ok != (c.want != "") || ok && why == "" {
			t.Errorf("Restricted(%q) = %q, %q, %v; want %q", c.expr, id, why, ok, c.want)
		}
	}
}

func TestParseCard(t *testing.T) {
	for _, c := range []struct {
		name, in string
		ok       bool
		err      bool
		want     Card
	}{
		{"key", "---\nlicense: apache-2.0\nlanguage: en\n---\n# Model\n", true, false, Card{License: "Apache-2.0", Raw: "apache-2.0"}},
		{"crlf and bom", "\xef\xbb\xbf---\r\nlicense: cc-by-nc-4.0\r\n---\r\n", true, false, Card{License: "CC-BY-NC-4.0", Raw: "cc-by-nc-4.0"}},
		{"other", "---\nlicense: other\nlicense_name: acme-model-license\nlicense_link: LICENSE.md\n---\n", true, false,
			Card{License: "LicenseRef-acme-model-license", Raw: "other", Name: "acme-model-license", Link: "LICENSE.md"}},
		{"other without name", "---\nlicense: other\n---\n", true, false, Card{Raw: "other"}},
		{"list", "---\nlicense:\n- mit\n- cc-by-4.0\n---\n", true, false, Card{License: "MIT AND CC-BY-4.0", Raw: "mit, cc-by-4.0"}},
		{"list with unknown", "---\nlicense: [mit, whatever]\n---\n", true, false, Card{Raw: "mit, whatever"}},
		{"no licence", "---\ntags: [x]\n---\n", true, false, Card{}},
		{"gate", "---\nlicense: llama3\nextra_gated_prompt: Accept the licence\nextra_gated_fields:\n  Country: country\n  Affiliation: text\n---\n", true, false,
			Card{License: "LicenseRef-hf-llama3", Raw: "llama3", GatePrompt: "Accept the licence", GateFields: []string{"Affiliation", "Country"}}},
		{"no front matter", "# Model\nlicense: mit\n", false, false, Card{}},
		{"unterminated", "---\nlicense: mit\n", false, false, Card{}},
		{"bad yaml", "---\nlicense: [mit\n---\n", true, true, Card{}},
		{"map licence", "---\nlicense: {a: b}\n---\n", true, false, Card{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := ParseCard([]byte(c.in))
			if ok != c.ok || (err != nil) != c.err {
				t.Fatalf("ok %v err %v, want ok %v err %v", ok, err, c.ok, c.err)
			}
			if got.License != c.want.License || got.Raw != c.want.Raw || got.Name != c.want.Name || got.Link != c.want.Link ||
				got.GatePrompt != c.want.GatePrompt || !slices.Equal(got.GateFields, c.want.GateFields) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func FuzzParseCard(f *testing.F) {
	for _, s := range []string{
		"---\nlicense: apache-2.0\n---\n",
		"---\nlicense: other\nlicense_name: x y\n---\n",
		"---\nlicense: [mit, gpl-3.0]\nextra_gated_fields: {a: text}\n---\n",
		"---\na: &a [*a]\n---\n",
		"# no card\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, ok, err := ParseCard(data)
		if !ok && (err != nil || c.License != "") {
			t.Fatalf("no card, but %+v, %v", c, err)
		}
		if c.License != "" && Normalize(c.License) != c.License {
			t.Fatalf("licence %q does not normalise to itself", c.License)
		}
		Restricted(c.License)
	})
}
