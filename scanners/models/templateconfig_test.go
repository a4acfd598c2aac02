package models

import (
	"context"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
	"github.com/mlwarden/mlwarden/scanners"
)

// TestTemplatesAnyKey: a Jinja template in any string value of a tokenizer
// or chat config — other keys than chat_template, lists of named templates
// under other keys, nested objects, YAML lists, GGUF keys other than
// tokenizer.chat_template — is analysed as a chat template; strings that
// only hold braces, and benign templates, are quiet.
func TestTemplatesAnyKey(t *testing.T) {
	evil := hostile.ChatTemplateEscape("block set")
	benign := "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}{% endfor %}"
	crit := scanners.SeverityCritical
	cases := []struct {
		name, path string
		data       []byte
		rule       string
		want       scanners.Severity // 0: nothing at medium or above
	}{
		{"top-level key", "tokenizer_config.json", hostile.TokenizerConfig("default", evil), ruleChatTemplate.ID, crit},
		{"named list under another key", "tokenizer_config.json", hostile.TokenizerConfig("named", evil), ruleChatTemplate.ID, crit},
		{"nested object", "chat_template.json", hostile.TokenizerConfig("nested", evil), ruleChatTemplate.ID, crit},
		{"another file name", "prompt_config.json", hostile.TokenizerConfig("default", evil), ruleChatTemplate.ID, crit},
		{"not JSON Go reads", "tokenizer_config.json", append([]byte(`{"x": NaN, `), hostile.TokenizerConfig("default", evil)[1:]...), ruleChatTemplate.ID, crit},
		{"no chat_template key", "prompts.json", []byte(`{"version": 2, "system_template": "` + strings.ReplaceAll(evil, `"`, `\"`) + `"}`), ruleChatTemplate.ID, crit},
		{"benign in another key", "tokenizer_config.json", hostile.TokenizerConfig("named", benign), ruleChatTemplate.ID, 0},
		{"braces in added tokens", "tokenizer_config.json", []byte(`{"added_tokens_decoder": {"1": {"content": "{{"}, "2": {"content": "{%"}}, "chat_template": "` + benign + `"}`), ruleChatTemplate.ID, 0},
		{"YAML list", "serve.yaml", []byte("chat_template: \"" + benign + "\"\ntemplates:\n  - name: tools\n    body: |\n      " + evil + "\n"), ruleChatTemplate.ID, crit},
		{"YAML that YAML cannot read", "serve.yaml", []byte("chat_template: \"" + benign + "\"\ntemplates:\n  - name: tools\n    body: '" + evil + "'\n"), ruleChatTemplate.ID, crit},
		{"GGUF key of another name", "m.gguf", hostile.GGUFTemplate("tokenizer.ggml.tool_template", evil), ruleGGUFTemplate.ID, crit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &scanners.Artifact{Kind: scanners.ArtifactFile, Path: c.path, Size: int64(len(c.data))}
			head := c.data[:min(len(c.data), scanners.HeadSize)]
			if !New().Wants(a, head) {
				t.Fatalf("not wanted")
			}
			fs, err := scanners.ScanBytes(context.Background(), New(), a, c.data)
			if err != nil {
				t.Fatal(err)
			}
			var got scanners.Severity
			for _, f := range fs {
				if f.Severity >= scanners.SeverityMedium {
					got = max(got, f.Severity)
					if f.RuleID != c.rule {
						t.Errorf("rule %s: %s", f.RuleID, f.Message)
					}
				}
			}
			if got != c.want {
				t.Errorf("top %v, want %v: %v", got, c.want, fs)
			}
		})
	}
}
