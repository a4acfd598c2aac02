package models

import (
	"os"
	"path/filepath"
	"testing"
)

// TestChatTemplatesAnyName: chat templates in files of any name are read — a
// JSON config with a chat_template key, a YAML config, a .j2 or .template
// file that loops over messages — and other Jinja files are not the models
// check's; a getattr() walk is one too.
func TestChatTemplatesAnyName(t *testing.T) {
	bad := `{{ ''.__class__.__mro__[1].__subclasses__() }}`
	good := `{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}{% endfor %}`
	dir := t.TempDir()
	for _, tt := range []struct {
		name, file, body string
		wants, hit       bool
	}{
		{"JSON under another name", "attack.json", `{"tokenizer_class": "X", "chat_template": "` + bad + `"}`, true, true},
		{"JSON under another name, benign", "chat.json", `{"chat_template": "` + good + `"}`, true, false},
		{"JSON without a template", "config.json", `{"hidden_size": 768}`, false, false},
		{"YAML config", "serve.yaml", "model_name: m\nchat_template: \"" + bad + "\"\n", true, true},
		{"YAML config nested", "serve.yml", "model:\n  chat_template: |\n    " + bad + "\n", true, true},
		{"YAML config, benign", "serve.yaml", "chat_template: \"" + good + "\"\n", true, false},
		{".template looping over messages", "chat.template", good + "\n" + bad + "\n", true, true},
		{".j2 looping over messages, benign", "chat.j2", good + "\n", true, false},
		{"an Ansible .j2", "nginx.conf.j2", "server {\n  listen {{ port }};\n}\n", false, false},
		{"getattr walk", "t.json", `{"chat_template": "{{ getattr(getattr('', '__class__'), '__mro__') }}"}`, true, true},
	} {
		p := filepath.Join(dir, tt.file)
		if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
			t.Fatal(err)
		}
		fs, wanted := scanAt(t, New(), p)
		if wanted != tt.wants {
			t.Errorf("%s: wanted %v, want %v", tt.name, wanted, tt.wants)
			continue
		}
		hit := false
		for _, f := range fs {
			hit = hit || f.RuleID == "models/chat-template-injection"
		}
		if hit != tt.hit {
			t.Errorf("%s: chat-template-injection %v, want %v (%v)", tt.name, hit, tt.hit, fs)
		}
	}
}
