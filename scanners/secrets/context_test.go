package secrets

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// unsuppressed drops the findings a marker suppressed.
func unsuppressed(fs []scanners.Finding) []scanners.Finding {
	var out []scanners.Finding
	for _, f := range fs {
		if f.Suppressed == "" {
			out = append(out, f)
		}
	}
	return out
}

// TestCodeContext: the generic rule's reading of ML code as assignments
// (issue 16): import lists, comparisons, keyword arguments, dotted paths,
// CI cache keys and keys public by design are not secrets; the same shapes
// as string literals, in comments, or as config values are.
func TestCodeContext(t *testing.T) {
	s := newScanner(t)
	g := newFake(16)
	hex32 := g.hex(32)
	rnd := g.str(alnum, 24)
	uuid := g.uuid()
	cacheStep := "      - uses: actions/cache@v4\n        with:\n          path: ~/.cache/pip\n          key: deps-v3-" + g.hex(16) + "\n          restore-keys: deps-v3-" + g.hex(16) + "\n"
	for _, tt := range []struct {
		name, path, text string
		want             int
	}{
		{"an import list", "model.py", "from transformers import T5Tokenizer, T5ForConditionalGeneration\n", 0},
		{"a JS import list", "app.ts", "import { AuthProvider, TokenStore2 } from './auth'\n", 0},
		{"a comparison", "attention.py", "    assert key.dtype == torch.bfloat16\n", 0},
		{"keyword arguments", "data.py", "    ds = pack(pad_token=tokenizer.pad, max_sequences_per_bin=4\n", 0},
		{"a dotted attribute", "train.py", "    token_dtype = torch.float16\n", 0},
		{"actions/cache keys", ".github/workflows/ci.yml", cacheStep, 0},
		{"a key under GitLab's cache", ".gitlab-ci.yml", "build:\n  cache:\n    key: deps-v3-" + g.hex(16) + "\n    paths: [.cache/pip]\n", 0},
		{"DocSearch's search-only key", "docusaurus.config.js", "  algolia: {\n    appId: 'BH4D9OD16A',\n    apiKey: '" + hex32 + "',\n    indexName: 'mydocs',\n  },\n", 0},
		{"a Firebase download token", "gallery.js", "const url = 'https://firebasestorage.googleapis.com/v0/b/app.appspot.com/o/img.png?alt=media&token=" + uuid + "'\n", 0},

		{"a literal compared", "auth.py", "    if token == \"" + rnd + "\":\n", 1},
		{"a literal in a tuple", "client.py", "headers = (\"X-Api-Token\", \"" + rnd + "\")\n", 1},
		{"a value in a comment", "train.py", "# api_key = " + rnd + "\n", 1},
		{"a key in YAML, not a cache", "values.yaml", "service:\n  key: deps-v3-" + g.hex(16) + "\n", 1},
		{"an apiKey without DocSearch", "config.js", "  apiKey: '" + hex32 + "',\n", 1},
		{"a token in another URL", "client.js", "const url = 'https://api.example.com/v1/files?token=" + uuid + "'\n", 1},
	} {
		if got := unsuppressed(scan(t, s, tt.path, tt.text)); len(got) != tt.want {
			t.Errorf("%s: %d findings %v, want %d", tt.name, len(got), ids(got), tt.want)
		}
	}
}

// TestWordy pins the rate at which random alphanumeric values read as
// names made of words (the figure quoted in wordy's comment), and that
// identifiers do.
func TestWordy(t *testing.T) {
	for _, w := range []string{"T5ForConditionalGeneration", "Wav2Vec2Processor", "bfloat16", "RegEnumKey", "XLMRobertaTokenizerFast", "LlamaForCausalLM", "max_sequences_per_bin"} {
		if !wordy(w) {
			t.Errorf("%s: not wordy", w)
		}
	}
	r := rand.New(rand.NewPCG(16, 26))
	for _, tc := range []struct {
		n   int
		max float64
	}{{16, 0.03}, {26, 0.008}} {
		hit := 0
		const runs = 100000
		b := make([]byte, tc.n)
		for range runs {
			for i := range b {
				b[i] = alnum[r.IntN(len(alnum))]
			}
			if wordy(string(b)) {
				hit++
			}
		}
		if rate := float64(hit) / runs; rate > tc.max {
			t.Errorf("%d characters: %.4f of random values read as words, want at most %.4f", tc.n, rate, tc.max)
		}
	}
}

// TestEncodingsAndContexts: credentials written as JSON escapes, split over
// a concatenation, assigned to os.environ in notebooks, or in a .netrc
// entry over three lines (issue 16).
func TestEncodingsAndContexts(t *testing.T) {
	s := newScanner(t)
	g := newFake(61)
	webhook := "https://hooks.slack.com/services/T" + g.str(awsID, 10) + "/B" + g.str(awsID, 10) + "/" + g.str(alnum, 24)
	cohere, mistral, wandb := g.str(alnum, 40), g.str(alnum, 32), g.hex(40)
	openai := "sk-proj-" + g.str(urlTok, 74) + "T3BlbkFJ" + g.str(urlTok, 74)
	nb := func(src ...string) string {
		b, _ := json.Marshal(map[string]any{"cells": []any{map[string]any{"cell_type": "code", "source": src}}})
		return string(b)
	}
	for _, tt := range []struct {
		name, path, text, rule string
		line                   int
	}{
		{"Slack webhook with escaped slashes", "hooks.json", `{"url": "` + strings.ReplaceAll(webhook, "/", `\/`) + `"}`, "secrets/slack-webhook-url", 1},
		{"unicode-escaped slashes", "hooks.json", `{"url": "` + strings.ReplaceAll(webhook, "/", `\u002f`) + `"}`, "secrets/slack-webhook-url", 1},
		{"Cohere key in a notebook", "nb.ipynb", nb("import os\n", "os.environ[\"COHERE_API_KEY\"] = \""+cohere+"\"\n"), "secrets/cohere-api-key", 1},
		{"Mistral key in a notebook", "nb.ipynb", nb("os.environ['MISTRAL_API_KEY'] = '" + mistral + "'\n"), "secrets/mistral-api-key", 1},
		{"W&B key in Python", "setup_env.py", "import os\nos.environ[\"WANDB_API_KEY\"] = \"" + wandb + "\"\n", "secrets/wandb-api-key-legacy", 2},
		{"a notebook read as raw JSON text", "nb.json", strings.ReplaceAll(nb("os.environ[\"COHERE_API_KEY\"] = \""+cohere+"\"\n"), `\n`, "\\n\n"), "secrets/cohere-api-key", 1},
		{"a key joined with +", "client.py", "key = \"" + openai[:8] + "\" + \"" + openai[8:] + "\"\n", "secrets/openai-api-key", 1},
		{"a W&B .netrc over three lines", "home/.netrc", "machine api.wandb.ai\n  login user\n  password " + wandb + "\n", "secrets/wandb-api-key-legacy", 3},
		{"a .netrc over three lines", ".netrc", "machine git.internal.example\n  login bot\n  password " + g.str(alnum, 20) + "\n", "secrets/netrc-password", 3},
	} {
		fs := scan(t, s, tt.path, tt.text)
		if len(fs) != 1 || fs[0].RuleID != tt.rule || fs[0].Line != tt.line {
			t.Errorf("%s: %v, want %s at line %d", tt.name, ids(fs), tt.rule, tt.line)
		}
	}
	// A comparison of a subscript is not an assignment.
	if fs := scan(t, s, "check.py", "ok = os.environ[\"MISTRAL_API_KEY\"] == expected_mistral_key\n"); len(fs) != 0 {
		t.Errorf("comparison: %v", ids(fs))
	}
}

// TestAllowMarkers: gitleaks:allow and detect-secrets' pragmas suppress a
// finding with a reason; the finding is still reported (counted as
// suppressed), never dropped.
func TestAllowMarkers(t *testing.T) {
	s := newScanner(t)
	g := newFake(62)
	tok := func() string { return "hf_" + g.str(alnum, 34) }
	for _, tt := range []struct {
		name, text, reason string
		line               int
	}{
		{"gitleaks:allow", "export HF_TOKEN=" + tok() + " # gitleaks:allow\n", "gitleaks:allow", 1},
		{"pragma: allowlist secret", "HF_TOKEN = \"" + tok() + "\"  # pragma: allowlist secret\n", "pragma: allowlist secret", 1},
		{"pragma: allowlist nextline secret", "x = 1\n# pragma: allowlist nextline secret\nHF_TOKEN = \"" + tok() + "\"\n", "nextline", 3},
		{"no marker", "HF_TOKEN = \"" + tok() + "\"\n", "", 1},
		{"a marker two lines up", "# pragma: allowlist nextline secret\nx = 1\nHF_TOKEN = \"" + tok() + "\"\n", "", 3},
	} {
		fs := scan(t, s, "job.py", tt.text)
		if len(fs) != 1 || fs[0].Line != tt.line {
			t.Fatalf("%s: %v", tt.name, ids(fs))
		}
		if got := fs[0].Suppressed; tt.reason == "" && got != "" || !strings.Contains(got, tt.reason) {
			t.Errorf("%s: suppressed %q, want %q", tt.name, got, tt.reason)
		}
	}
}
