package secrets

import (
	"fmt"
	"strings"
	"testing"
)

func TestSDKContext(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`co = cohere.Client("abc")`, `co = cohere.Client(CO_API_KEY="abc")`},
		{`co = cohere.Client(api_key="abc", timeout=5)`, `co = cohere.Client(CO_API_KEY="abc", timeout=5)`},
		{`co = cohere.Client(os.environ["CO_API_KEY"])`, `co = cohere.Client(os.environ["CO_API_KEY"])`},
		{`wandb.login(key='abc')`, `wandb.login(WANDB_API_KEY='abc')`},
		{`wandb.login("abc")`, `wandb.login("abc")`}, // anonymous=, not the key
		{`wandb.login(relogin=True, key="abc")`, `wandb.login(relogin=True, WANDB_API_KEY="abc")`},
		{"from huggingface_hub import login\nlogin(\"abc\")", "from huggingface_hub import login\nlogin(HF_TOKEN=\"abc\")"},
		{`login("abc")`, `login("abc")`}, // whose login?
		{`api = HfApi(endpoint="https://x", token="abc")`, `api = HfApi(endpoint="https://x", HF_TOKEN="abc")`},
		{`HfApi("https://x")`, `HfApi("https://x")`},
		{`g = Groq(\n    api_key="abc",\n)`, `g = Groq(\n    GROQ_API_KEY="abc",\n)`},
		{`r = replicate.Client(api_token="abc")`, `r = replicate.Client(REPLICATE_API_TOKEN="abc")`},
		{`new Groq({ apiKey: "abc" })`, `new Groq({ GROQ_API_KEY= "abc" })`},
		{`new Replicate({"auth": "abc"})`, `new Replicate({REPLICATE_API_TOKEN= "abc"})`},
		{`f(cohere.Client(g("x", key="y")), token="abc")`, `f(cohere.Client(g("x", key="y")), token="abc")`},
		{`co = cohere.Client(\"abc\")`, `co = cohere.Client(CO_API_KEY=\"abc\")`}, // a notebook's JSON-escaped source
		{`Client("abc")`, `Client("abc")`},
		{"import cohere\nco = Client(\"abc\")", "import cohere\nco = Client(CO_API_KEY=\"abc\")"},
		{`x = Pinecone(api_key == "abc")`, `x = Pinecone(api_key == "abc")`},
		{`(`, `(`},
		{`Groq(`, `Groq(`},
	} {
		in := strings.ReplaceAll(tc.in, `\n`, "\n")
		want := strings.ReplaceAll(tc.want, `\n`, "\n")
		if strings.Contains(tc.in, `\"`) {
			in, want = tc.in, tc.want
		}
		if got := string(sdkContext([]byte(in))); got != want {
			t.Errorf("sdkContext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSDKCredentials: an ML SDK's constructor or login call is the
// assignment context of its provider's key shape, in code and in a
// notebook (issue 37, item 3).
func TestSDKCredentials(t *testing.T) {
	g := newFake(3737)
	co, wb, mi, tg := g.str(alnum, 40), g.hex(40), g.str(alnum, 32), g.hex(64)
	hfOld := "api_" + g.str("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 34)
	nb := func(src string) string {
		return `{"cells": [{"cell_type": "code", "source": ["` + strings.ReplaceAll(src, `"`, `\"`) + `\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`
	}
	s := newScanner(t)
	for _, tc := range []struct{ name, path, text, rule string }{
		{"cohere positional", "app.py", "import cohere\nco = cohere.Client(\"" + co + "\")\n", "secrets/cohere-api-key"},
		{"cohere keyword", "app.py", "co = cohere.ClientV2(api_key=\"" + co + "\")\n", "secrets/cohere-api-key"},
		{"cohere imported", "app.py", "from cohere import Client\nco = Client('" + co + "')\n", "secrets/cohere-api-key"},
		{"cohere js", "app.ts", "const c = new CohereClient({ token: \"" + co + "\" });\n", "secrets/cohere-api-key"},
		{"wandb login", "train.py", "import wandb\nwandb.login(key=\"" + wb + "\")\n", "secrets/wandb-api-key-legacy"},
		{"wandb api", "train.py", "api = wandb.Api(api_key=\"" + wb + "\")\n", "secrets/wandb-api-key-legacy"},
		{"huggingface login, legacy token", "train.py", "import huggingface_hub\nhuggingface_hub.login(\"" + hfOld + "\")\n", "secrets/huggingface-legacy-token"},
		{"hfapi, legacy token", "train.py", "api = HfApi(token=\"" + hfOld + "\")\n", "secrets/huggingface-legacy-token"},
		{"mistral", "chat.py", "client = MistralClient(\"" + mi + "\")\n", "secrets/mistral-api-key"},
		{"together", "chat.py", "client = Together(api_key=\"" + tg + "\")\n", "secrets/together-api-key"},
		{"call over lines, split literal", "app.py", "co = cohere.Client(\n    \"" + co[:20] + "\"\n    \"" + co[20:] + "\"\n)\n", "secrets/cohere-api-key"},
		{"call over lines, keyword", "app.py", "co = cohere.Client(\n    timeout=30,\n    api_key=\"" + co + "\",\n)\n", "secrets/cohere-api-key"},
		{"notebook", "nb.ipynb", nb("co = cohere.Client(\"" + co + "\")"), "secrets/cohere-api-key"},
		{"notebook, call over source lines", "nb.ipynb", `{"cells": [{"cell_type": "code", "source": ["import cohere\n", "co = Client(\n", "    api_key=\"` + co + `\",\n", ")\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`, "secrets/cohere-api-key"},
		{"notebook, not JSON", "nb.ipynb", nb("co = cohere.Client(\""+co+"\")") + ",", "secrets/cohere-api-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range scan(t, s, tc.path, tc.text) {
				got = append(got, f.RuleID)
			}
			if len(got) != 1 || got[0] != tc.rule {
				t.Errorf("findings %v, want [%s]", got, tc.rule)
			}
		})
	}
	// Not credentials: names and calls passed, other arguments.
	for _, text := range []string{
		"co = cohere.Client(os.environ[\"CO_API_KEY\"])\n",
		"wandb.login(key=args.wandb_key)\n",
		"api = HfApi(endpoint=\"https://huggingface.co\", token=token)\n",
		fmt.Sprintf("client = InferenceClient(\"meta-llama/Llama-3.1-8B-Instruct\", timeout=%d)\n", 30),
	} {
		if fs := scan(t, s, "app.py", text); len(fs) > 0 {
			t.Errorf("%q: %s", text, fs[0].Message)
		}
	}
}

func FuzzSDKContext(f *testing.F) {
	for _, s := range []string{`cohere.Client("abc")`, `wandb.login(key='abc')`, "from huggingface_hub import login\nlogin(\"x\")", `new Groq({ apiKey: "abc" })`, `cohere.Client(\"abc\")`, `Groq(api_key=`, `HfApi({"token": "x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := sdkContext(b)
		if strings.Count(string(got), "\n") != strings.Count(string(b), "\n") {
			t.Fatalf("sdkContext(%q) = %q: line breaks changed", b, got)
		}
	})
}
