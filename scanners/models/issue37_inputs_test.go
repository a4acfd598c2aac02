package models

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
)

// TestWriteIssue37Inputs writes the crafted inputs of issue 37's model
// items, one directory each, for measuring the built binary:
//
//	MLWARDEN_MODELS37_DIR=/tmp/m37 go test -run TestWriteIssue37Inputs ./scanners/models/
//	/usr/bin/time -v mlwarden scan --checks models /tmp/m37/<case>
func TestWriteIssue37Inputs(t *testing.T) {
	dir := os.Getenv("MLWARDEN_MODELS37_DIR")
	if dir == "" {
		t.Skip("set MLWARDEN_MODELS37_DIR to write the inputs")
	}
	literal := "{{ cycler.__init__.__globals__.os.popen('true').read() }}"
	files := map[string][]byte{
		"template-doubling-dict/tokenizer_config.json":      hostile.TokenizerConfig("chat_template", hostile.TemplateDoubling("dict", 40)),
		"template-doubling-namespace/tokenizer_config.json": hostile.TokenizerConfig("chat_template", hostile.TemplateDoubling("namespace", 40)),
		"template-other-key/tokenizer_config.json":          hostile.TokenizerConfig("named", literal),
		"keras-config-fn/model.keras": hostile.KerasArchive(hostile.KerasSequential(1, map[string]any{"module": "keras.layers", "class_name": "Layer",
			"config": map[string]any{"name": "c", "fn": "subprocess.check_output"}}), "3.9.0"),
		"keras-deep-lambda/model.keras": hostile.KerasArchive(hostile.KerasSequential(40, map[string]any{"module": "keras.layers", "class_name": "Lambda",
			"config": map[string]any{"name": "deep", "function": map[string]any{"module": "builtins", "class_name": "function", "config": "print"}}}), "3.9.0"),
		"onnx-inside-dotdot/model.onnx":  hostile.ONNXExternal("sub/../weights.bin"),
		"onnx-inside-dotdot/weights.bin": make([]byte, 16),
	}
	for _, trick := range hostile.TemplateTricks() {
		files["template-"+trick+"/tokenizer_config.json"] = hostile.TokenizerConfig("chat_template", hostile.ChatTemplateEscape(trick))
		files["template-"+trick+"/model.gguf"] = hostile.GGUFTemplate("tokenizer.chat_template", hostile.ChatTemplateEscape(trick))
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
