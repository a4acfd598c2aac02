package secrets

import (
	"strings"
	"testing"
)

// TestCodeReferences: names passed around in ML code are not secrets, but
// the same words as a string literal or as a value in a config are kept.
func TestCodeReferences(t *testing.T) {
	s := newScanner(t)
	const kwargs = "    tgt_key_padding_mask=tgt_key_padding_mask, src_key_padding_mask=src_key_padding_mask\n"
	for _, tt := range []struct {
		name, path, text string
		want             int
	}{
		{"keyword arguments (torch's own code)", "common_modules.py", kwargs, 0},
		{"the same in a notebook's code", "nb.ipynb", `{"cells":[{"cell_type":"code","source":["` + strings.TrimSuffix(kwargs, "\n") + `"]}]}`, 0},
		{"the same as a config value", "prod.env", kwargs, 1},
		{"a digit makes it a value", "train.py", strings.Replace(kwargs, "mask\n", "mask2\n", 1), 1},
		{"quoted, it is a literal", "train.py", strings.Replace(kwargs, "src_key_padding_mask=src_key_padding_mask", "\"src_key_padding_mask=src_key_padding_mask\"", 1), 1},
	} {
		if got := len(scan(t, s, tt.path, tt.text)); got != tt.want {
			t.Errorf("%s: %d findings, want %d", tt.name, got, tt.want)
		}
	}
}
