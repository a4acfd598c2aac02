package secrets

import (
	"bytes"
	"strings"
)

// ML SDK calls that take a credential (issue 37, item 3).
//
// Many provider keys have no prefix of their own — a Cohere key is 40
// alphanumerics, a legacy W&B key 40 hex digits, a Mistral key 32
// alphanumerics — and their rules report them only after the provider's
// name and an operator (CO_API_KEY=…, wandb … = …). Code hands them to the
// SDK instead: cohere.Client("…"), wandb.login(key="…"),
// huggingface_hub.login("…"), HfApi(token="…"), new Groq({apiKey: "…"}).
// Such a call is the assignment: sdkContext rewrites the argument that is
// the credential — a keyword argument (key=, token=, api_key=, apiKey:,
// auth: … inside the call's parentheses or its first {…}) or, for the
// calls whose first parameter is the credential, the first positional
// argument — as the provider's variable, PROVIDER_VAR="…", so that every
// rule reads it as it reads an environment file. Only string literals are
// rewritten (also JSON-escaped, \"…\", as a notebook's source is when the
// notebook is not valid JSON); a name or call passed instead is code.
//
// The calls are known by the last name of the callee and, where that name
// is common (Client, login, init), by the module it is called on or, bare,
// by the module's name in the text (from cohere import Client). The text
// is searched for '(' (IndexByte) and a call looked up only where the
// three bytes before one end a known name.

// sdkCall is what a callee's last name means.
type sdkCall struct {
	env        string            // the provider's variable, when the name is the SDK's own
	positional bool              // its first positional parameter is the credential
	mods       map[string]string // module → variable, for common names
	posMods    map[string]bool   // the modules whose call takes the credential first
}

var sdkCalls = func() map[string]sdkCall {
	m := map[string]sdkCall{}
	own := func(env string, positional bool, names ...string) {
		for _, n := range names {
			m[n] = sdkCall{env: env, positional: positional}
		}
	}
	own("CO_API_KEY", true, "CohereClient", "CohereClientV2", "AsyncCohereClient")
	own("CO_API_KEY", false, "ChatCohere", "CohereEmbeddings", "CohereRerank")
	own("HF_TOKEN", false, "HfApi", "InferenceClient", "AsyncInferenceClient", "HfFileSystem", "InferenceApi")
	own("GROQ_API_KEY", false, "Groq", "AsyncGroq", "ChatGroq")
	own("REPLICATE_API_TOKEN", false, "Replicate")
	own("MISTRAL_API_KEY", true, "MistralClient", "MistralAsyncClient")
	own("MISTRAL_API_KEY", false, "Mistral", "ChatMistralAI", "MistralAIEmbeddings")
	own("TOGETHER_API_KEY", false, "Together", "AsyncTogether", "ChatTogether", "TogetherEmbeddings")
	own("PINECONE_API_KEY", true, "Pinecone", "PineconeGRPC", "PineconeAsyncio")
	own("OPENAI_API_KEY", false, "OpenAI", "AsyncOpenAI", "AzureOpenAI", "ChatOpenAI", "OpenAIEmbeddings")
	own("ANTHROPIC_API_KEY", false, "Anthropic", "AsyncAnthropic", "ChatAnthropic", "AnthropicVertex")
	own("NVIDIA_API_KEY", false, "ChatNVIDIA", "NVIDIAEmbeddings")
	own("DATABRICKS_TOKEN", false, "WorkspaceClient", "AccountClient")
	own("NEPTUNE_API_TOKEN", false, "init_run", "init_project") // not init_model: "el(" ends model( in all code
	common := func(mods map[string]string, first []string, names ...string) {
		pos := map[string]bool{}
		for _, f := range first {
			pos[f] = true
		}
		for _, n := range names {
			m[n] = sdkCall{mods: mods, posMods: pos}
		}
	}
	common(map[string]string{"cohere": "CO_API_KEY", "replicate": "REPLICATE_API_TOKEN", "langsmith": "LANGSMITH_API_KEY", "xai_sdk": "XAI_API_KEY"},
		[]string{"cohere", "replicate"}, "Client", "AsyncClient")
	common(map[string]string{"cohere": "CO_API_KEY"}, []string{"cohere"}, "ClientV2", "AsyncClientV2")
	// wandb.login's first parameter is "anonymous": its key goes by keyword.
	common(map[string]string{"huggingface_hub": "HF_TOKEN", "comet_ml": "COMET_API_KEY", "wandb": "WANDB_API_KEY"}, []string{"huggingface_hub", "comet_ml"}, "login")
	common(map[string]string{"wandb": "WANDB_API_KEY"}, nil, "Api")
	common(map[string]string{"comet_ml": "COMET_API_KEY"}, []string{"comet_ml"}, "Experiment", "ExistingExperiment", "APIExperiment")
	common(map[string]string{"pinecone": "PINECONE_API_KEY", "comet_ml": "COMET_API_KEY", "neptune": "NEPTUNE_API_TOKEN"}, []string{"pinecone"}, "init")
	common(map[string]string{"huggingface_hub": "HF_TOKEN"}, nil, "hf_hub_download", "snapshot_download", "upload_file", "upload_folder", "create_repo")
	common(map[string]string{"huggingface_hub": "HF_TOKEN", "HfFolder": "HF_TOKEN"}, []string{"huggingface_hub", "HfFolder"}, "save_token")
	return m
}()

// sdkTail has bit tailHash of the last three bytes of every name in
// sdkCalls: most '(' are ruled out by it (two bytes let every print( of
// Python through, for Client's "nt").
var sdkTail = func() (t [1 << 16 / 64]uint64) {
	for n := range sdkCalls {
		h := tailHash(n[len(n)-3], n[len(n)-2], n[len(n)-1])
		t[h>>6] |= 1 << (h & 63)
	}
	return t
}()

func tailHash(a, b, c byte) uint16 { return uint16(a)<<11 ^ uint16(b)<<5 ^ uint16(c) }

// maxCallArgs bounds how far after '(' the call's arguments are read.
const maxCallArgs = 1024

// sdkContext rewrites the credential arguments of SDK calls in text (see
// the comment above); text is returned as it is when there are none.
func sdkContext(text []byte) []byte {
	var out []byte
	copied := 0
	for from := 0; from < len(text); {
		i := bytes.IndexByte(text[from:], '(')
		if i < 0 {
			break
		}
		p := from + i
		from = p + 1
		if p < 3 {
			continue
		}
		if h := tailHash(text[p-3], text[p-2], text[p-1]); sdkTail[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		env, positional, ok := sdkCallee(text, p)
		if !ok {
			continue
		}
		edits := credentialArgs(text, p, positional)
		for _, e := range edits {
			if e.at < copied {
				continue
			}
			if out == nil {
				out = make([]byte, 0, len(text)+64)
			}
			out = append(out, text[copied:e.at]...)
			out = append(out, env...)
			out = append(out, '=')
			copied = e.end
		}
	}
	if out == nil {
		return text
	}
	return append(out, text[copied:]...)
}

// sdkCallee looks up the callee that ends before the '(' at p.
func sdkCallee(text []byte, p int) (env string, positional, ok bool) {
	s := p
	for s > 0 && p-s < 128 && (isWordByte(text[s-1]) || text[s-1] == '.') {
		s--
	}
	callee := text[s:p]
	name := callee
	var mod []byte
	if d := bytes.LastIndexByte(callee, '.'); d >= 0 {
		name = callee[d+1:]
		mod = callee[:d]
		if f := bytes.IndexByte(mod, '.'); f >= 0 {
			mod = mod[:f]
		}
	}
	c, found := sdkCalls[string(name)]
	if !found {
		return "", false, false
	}
	if c.env != "" {
		return c.env, c.positional, true
	}
	if mod != nil {
		env, ok = c.mods[string(mod)]
		return env, c.posMods[string(mod)], ok
	}
	// Bare: the module named in the text (an import). Map order does not
	// matter for the check's findings: every module of one name has the
	// same shape of call, and only the rules of the key's shape match.
	best := ""
	for m := range c.mods {
		if (best == "" || m < best) && bytes.Contains(text, []byte(m)) {
			best = m
		}
	}
	if best == "" {
		return "", false, false
	}
	return c.mods[best], c.posMods[best], true
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// argEdit replaces text[at:end] (a keyword's name and its operator, or
// nothing before a positional literal) with the provider's variable and
// "=".
type argEdit struct{ at, end int }

// credentialArgs reads the arguments of the call whose '(' is at p (up to
// its ')' or maxCallArgs bytes) and returns the edits for its credential
// arguments: keywords that name a key, token or auth given a string
// literal, and, when positional, a first positional string literal. A
// {…} right after '(' (JavaScript's options object) is read as the
// arguments.
func credentialArgs(text []byte, p int, positional bool) []argEdit {
	end := min(len(text), p+1+maxCallArgs)
	i := p + 1
	skip := func() {
		for i < end && (isBlank(text[i]) || text[i] == '\n' || text[i] == '\r') {
			i++
		}
	}
	skip()
	obj := false
	if i < end && text[i] == '{' {
		obj, positional = true, false
		i++
	}
	var edits []argEdit
	first := true
	for i < end {
		skip()
		// One argument: name= / name: then a value, or a value.
		a := i
		for i < end && isWordByte(text[i]) {
			i++
		}
		name := text[a:i]
		if obj && len(name) == 0 && i < end && isQuote(text[i]) {
			// {"apiKey": …}: a quoted name
			if e := pastLiteral(text, i, end, false); e < end && e-i > 2 {
				name, i = text[i+1:e-1], e
			}
		}
		j := i
		for j < end && isBlank(text[j]) {
			j++
		}
		kw := false
		if len(name) > 0 && j < end {
			switch {
			case text[j] == '=' && (j+1 >= end || text[j+1] != '='):
				kw = true
			case text[j] == ':' && obj:
				kw = true
			}
		}
		if kw {
			v := j + 1
			for v < end && isBlank(text[v]) {
				v++
			}
			if credentialName(name) && literalAt(text, v, end) {
				edits = append(edits, argEdit{at: a, end: j + 1})
			}
			i = v
		} else {
			i = a
			if first && positional && literalAt(text, i, end) {
				edits = append(edits, argEdit{at: i, end: i})
			}
		}
		first = false
		// Past the value, to the next ',' at this depth, or the end.
		depth := 0
		for i < end {
			c := text[i]
			switch {
			case c == '"' || c == '\'' || c == '`':
				i = pastLiteral(text, i, end, false)
				continue
			case c == '\\' && i+1 < end && (text[i+1] == '"' || text[i+1] == '\''):
				i = pastLiteral(text, i+1, end, true)
				continue
			case c == '(' || c == '[' || c == '{':
				depth++
			case c == ')' || c == ']' || c == '}':
				if depth == 0 {
					return edits
				}
				depth--
			}
			i++
			if c == ',' && depth == 0 {
				break
			}
		}
	}
	return edits
}

// credentialName reports whether a keyword argument names a credential:
// key, token, api_key, apiKey, api_token, auth, cohere_api_key …
func credentialName(name []byte) bool {
	n := strings.ToLower(string(name))
	return strings.Contains(n, "key") || strings.Contains(n, "token") || n == "auth" || strings.HasSuffix(n, "password") || strings.HasSuffix(n, "secret")
}

// literalAt reports whether a string literal starts at i: a quote, or an
// escaped one (\" in JSON-escaped source), closed before end.
func literalAt(text []byte, i, end int) bool {
	escaped := i < end && text[i] == '\\'
	if escaped {
		i++
	}
	if i >= end || !isQuote(text[i]) {
		return false
	}
	e := pastLiteral(text, i, end, escaped)
	return e < end && text[e-1] == text[i] && e-i > 2
}

// pastLiteral returns where the literal opened by the quote at i ends
// (after its closing quote), or where its line or end does. Opened
// escaped (\" in JSON-escaped source), it closes at an escaped quote.
func pastLiteral(text []byte, i, end int, escaped bool) int {
	q := text[i]
	for j := i + 1; j < end; j++ {
		switch c := text[j]; {
		case c == '\n':
			return j
		case escaped && c == '\\' && j+1 < end && text[j+1] == q:
			return j + 2
		case c == '\\':
			j++
		case c == q && !escaped:
			return j + 1
		}
	}
	return end
}
