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
		{"a digit in a name in code is still a name", "train.py", strings.Replace(kwargs, "mask\n", "mask2\n", 1), 0},
		{"a random value in code is kept", "train.py", "api_key = aB3dE5fG7hI9jK1LmN0pQ\n", 1},
		{"protobuf's generated options", "descriptor_pb2.py", "  _FILEDESCRIPTORSET._serialized_options=b'\\x00', create_key=_descriptor._internal_create_key,\n", 0},
		{"an f-string's field", "netrc.py", "        return f'machine {hostname} login {self.username} password {self.password}'\n", 0},
		{"quoted, it is a literal", "train.py", strings.Replace(kwargs, "src_key_padding_mask=src_key_padding_mask", "\"src_key_padding_mask=src_key_padding_mask\"", 1), 1},
	} {
		if got := len(scan(t, s, tt.path, tt.text)); got != tt.want {
			t.Errorf("%s: %d findings, want %d", tt.name, got, tt.want)
		}
	}
}

// TestDigestsAndRFCExamples: hex digests on lines that name them and the
// OAuth RFCs' example values are not credentials; the same shapes without
// that context are.
func TestDigestsAndRFCExamples(t *testing.T) {
	s := newScanner(t)
	g := newFake(31)
	for _, tt := range []struct {
		name, path, text string
		want             int
	}{
		{"named sha256 test vector", "test_rng.py", `        "initial": {"key_sha256": "` + g.str(hexLow, 64) + `", "pos": 9},` + "\n", 0},
		{"32 hex without a digest name", "client.py", `    api_key = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"` + "\n", 1},
		{"the same named a checksum", "client.py", `    api_key_md5 = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"` + "\n", 0},
		{"RFC 5849 example consumer key", "parameters.py", `    oauth_consumer_key="0685bd9184jfhq22",` + "\n", 0},
		{"RFC 6749 example token", "parameters.py", "  Location: http://example.com/cb#access_token=2YotnFZFEjr1zCsicMWpAA\n", 0},
		{"another consumer key", "parameters.py", `    oauth_consumer_key="0685bd9184jfhq23",` + "\n", 1},
	} {
		if got := len(scan(t, s, tt.path, tt.text)); got != tt.want {
			t.Errorf("%s: %d findings, want %d", tt.name, got, tt.want)
		}
	}
}
