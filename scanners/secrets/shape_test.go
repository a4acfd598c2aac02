package secrets

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestValueShapes: the false positives judged by hand on twelve public ML
// training repositories (issue 16; shape.go) are dropped, and the same
// places with values shaped as credentials are still reported.
func TestValueShapes(t *testing.T) {
	s := newScanner(t)
	g := newFake(23)
	rnd := g.str(alnum, 24)
	hex := g.hex(64)
	digests := "  \"_parse_a\": \"" + g.hex(64) + "\",\n  \"_quote_b_object_keys\": \"" + hex + "\",\n  \"_render_c\": \"" + g.hex(64) + "\",\n  \"_strip_d\": \"" + g.hex(64) + "\",\n"
	for _, tt := range []struct {
		name, path, text string
		want             int
	}{
		{"an ascending placeholder in escaped JSON", "toolcall_demo.json", `  "value": "{\"password\": \"A1b2C3d4E5f6\"}"` + "\n", 0},
		{"an ascending placeholder", "test_routes.py", "        'auth: {\"api_key\":\"abcdef123456\"}\\n'\n", 0},
		{"words and an ascending number", "test_swanlab.py", "                \"swanlab_api_key\": \"test-api-key-12345\",\n", 0},
		{"a model name", "clean_battle_data.py", "        \"gpt-4-0125-assistants-api\": \"gpt-4-turbo-browsing\",\n", 0},
		{"a model name with a size", "audio.test.ts", "        sidecarKey: \"qwen3-asr-0.6b\",\n", 0},
		{"a module path in a string", "tuners_utils.py", "    >>> key = \"lin0.road_theta.default\"\n", 0},
		{"a list of module names", "constants.py", "    \"bloom\": [\"query_key_value\", \"mlp.dense_4h_to_h\"],\n", 0},
		{"a digest keyed by its file", "truststore_manifest.json", "    \"truststore/_api.py\": \"" + hex + "\",\n", 0},
		{"a digest among digests", "golden_outputs.json", "{\n" + digests + "}\n", 0},
		{"a PostHog project key", "telemetry/manager.py", "POSTHOG_WRITE_KEY = \"phc_" + g.str(alnum, 43) + "\"\n", 0},
		{"a word after Dropbox", "pii.jsonl", `{"text": "Passage: '''\nDiscover Dropbox: Revolutionizing File Storage and Collaboration"}` + "\n", 0},

		{"a GitHub token placeholder", "test_redaction.py", "    \"token ghp_ABCDEFGHIJKLMNOPQRST0123456789abcdef\",\n", 0},
		{"a W&B key placeholder", "test_redaction.py", "    \"WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567\",\n", 0},
		{"a Hugging Face token placeholder", "test_tokens.py", "    hf_token = \"hf_QRSTuvWXyz0123456789abcdefGHIJklmn\"\n", 0},
		{"a Stripe placeholder", "test_redaction.py", "    \"sk_live_abcdefghijklmnopqrstuvwx123456\",\n", 0},
		{"a Hugging Face token", "test_tokens.py", "    hf_token = \"hf_" + g.str(alnum, 34) + "\"\n", 1},
		{"a random value", "client.py", "api_key = \"" + rnd + "\"\n", 1},
		{"a placeholder password", "settings.py", "password = \"abcdef123456\"\n", 0},
		{"a model name as a password", "settings.py", "admin_password = \"gpt-4-turbo-browsing\"\n", 1},
		{"a digest as a secret", "config.json", "  \"signing_key\": \"" + hex + "\",\n", 1},
		{"a digest among secrets", ".env", "SIGNING_KEY=" + g.hex(64) + "\nJWT_TOKEN_KEY=" + hex + "\nSESSION_KEY=" + g.hex(64) + "\n", 3},
		{"a PostHog personal key", "telemetry.py", "POSTHOG_KEY = \"phx_" + g.str(alnum, 43) + "\"\n", 1},
		{"a Dropbox token", "sync.py", "dropbox_key = \"" + strings.ToLower(g.str(alnum, 15)) + "\"\n", 1},
	} {
		if got := unsuppressed(scan(t, s, tt.path, tt.text)); len(got) != tt.want {
			t.Errorf("%s: %d findings %v, want %d", tt.name, len(got), ids(got), tt.want)
		}
	}
}

// TestShapeRates: random values of credential alphabets seldom read as
// an English word, a placeholder, a model name or a dotted path of names.
func TestShapeRates(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 61))
	const lower = "abcdefghijklmnopqrstuvwxyz0123456789"
	for _, tc := range []struct {
		name string
		set  string
		n    int
		f    func(string) bool
		max  float64
	}{
		{"englishWord, 15 lower-case letters", lower[:26], 15, englishWord, 0.08},
		{"englishWord, base36", lower, 15, englishWord, 0.001},
		{"placeholder, alnum", alnum, 16, placeholder, 0},
		{"runsUp, alnum", alnum, 16, runsUp, 0},
		{"modelName, base36 with dashes", lower + "--", 24, modelName, 0.001},
	} {
		hit := 0
		const runs = 100000
		b := make([]byte, tc.n)
		for range runs {
			for i := range b {
				b[i] = tc.set[r.IntN(len(tc.set))]
			}
			if tc.f(string(b)) {
				hit++
			}
		}
		if rate := float64(hit) / runs; rate > tc.max {
			t.Errorf("%s: %.5f of random values, want at most %.5f", tc.name, rate, tc.max)
		}
	}
	for _, w := range []string{"Revolutionizing", "collaboration", "Discovering"} {
		if !englishWord(w) {
			t.Errorf("%s: not read as a word", w)
		}
	}
}
