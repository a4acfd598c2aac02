package rules

import (
	"testing"
	"testing/fstest"
)

func TestLoadSecrets(t *testing.T) {
	s, err := LoadSecrets(SecretsFS())
	if err != nil {
		t.Fatal(err)
	}
	if s.Names["huggingface-access-token"] != "huggingface-token" || s.Severity["wandb-api-key"] != "critical" || s.Fix["nvidia-api-key"] == "" {
		t.Errorf("metadata not read: %+v", s.Names)
	}
	// A directory may override the file.
	over := fstest.MapFS{SecretsFile: {Data: []byte("[mlwarden.names]\n\"x\" = \"y\"\n[[rules]]\nid = \"x\"\nseverity = \"low\"\n")}}
	s, err = LoadSecrets(over)
	if err != nil || s.Names["x"] != "y" || s.Severity["x"] != "low" {
		t.Errorf("override: %v %+v", err, s)
	}
	if _, err := LoadSecrets(fstest.MapFS{}); err == nil {
		t.Error("missing file accepted")
	}
	if _, err := ParseSecrets([]byte("[[rules]\n")); err == nil {
		t.Error("bad TOML accepted")
	}
}
