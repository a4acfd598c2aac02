package models

import (
	"bytes"
	"encoding/binary"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners/models/pickle"
)

type format int

const (
	fmtUnknown format = iota
	fmtPickle
	fmtTorchLegacy
	fmtZip
	fmtTar
	fmt7z
	fmtGzip
	fmtBzip2
	fmtXz
	fmtLzma
	fmtZlib
	fmtLz4
	fmtJoblibZF
	fmtNpy
	fmtGGUF
	fmtHDF5
	fmtSafetensors
	fmtProtobuf
	fmtChatJSON  // tokenizer_config.json, chat_template.json
	fmtJinja     // a .jinja chat template
	fmtChatYAML  // a YAML config with a chat_template key
	fmtModelfile // an Ollama Modelfile
)

var formatNames = map[format]string{
	fmtPickle: "pickle", fmtTorchLegacy: "PyTorch legacy", fmtZip: "zip", fmtTar: "tar",
	fmt7z: "7z", fmtGzip: "gzip", fmtBzip2: "bzip2", fmtXz: "xz", fmtLzma: "lzma", fmtZlib: "zlib",
	fmtLz4: "lz4", fmtJoblibZF: "joblib zfile", fmtNpy: "npy", fmtGGUF: "GGUF", fmtHDF5: "HDF5",
	fmtSafetensors: "safetensors", fmtProtobuf: "protobuf", fmtChatJSON: "chat template JSON",
	fmtJinja: "Jinja chat template", fmtModelfile: "Ollama Modelfile", fmtChatYAML: "chat template YAML",
}

func (f format) String() string { return formatNames[f] }

// legacyMagic is how PyTorch's legacy (non-zip) format starts: protocol 2,
// then LONG1 of the magic number 0x1950a86a20f9469cfc6c.
var legacyMagic = []byte{0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19}

// pickleNames are names that say a file is a pickle whatever it starts with.
var pickleExts = map[string]bool{
	".pkl": true, ".pickle": true, ".joblib": true, ".pt": true, ".pth": true, ".ckpt": true,
	".dill": true, ".sav": true, ".p": true,
}

func hasPickleName(name string) bool {
	return pickleExts[strings.ToLower(path.Ext(name))]
}

// sniff decides a format from the first bytes (and, only where a format has
// no magic, from the name together with the content's structure).
func sniff(head []byte, size int64, name string) format {
	switch {
	case len(head) < 2:
		return fmtUnknown
	case bytes.HasPrefix(head, legacyMagic):
		return fmtTorchLegacy
	case head[0] == 0x80 && head[1] >= 2 && head[1] <= 5 && (len(head) < 3 || pickle.IsOpcode(head[2])):
		return fmtPickle
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return fmtZip
	case bytes.HasPrefix(head, []byte("7z\xbc\xaf\x27\x1c")):
		return fmt7z
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return fmtGzip
	case bytes.HasPrefix(head, []byte("BZh")) && len(head) > 3 && head[3] >= '1' && head[3] <= '9':
		return fmtBzip2
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return fmtXz
	case bytes.HasPrefix(head, []byte{0x04, 0x22, 0x4d, 0x18}):
		return fmtLz4
	case bytes.HasPrefix(head, []byte("\x93NUMPY")):
		return fmtNpy
	case bytes.HasPrefix(head, []byte("GGUF")):
		return fmtGGUF
	case bytes.HasPrefix(head, []byte("\x89HDF\r\n\x1a\n")):
		return fmtHDF5
	case len(head) >= 262 && bytes.Equal(head[257:262], []byte("ustar")):
		return fmtTar
	case bytes.HasPrefix(head, []byte("ZF0x")):
		return fmtJoblibZF
	}
	if isLzmaAlone(head) {
		return fmtLzma
	}
	if isZlib(head) && hasPickleName(name) {
		return fmtZlib
	}
	if isSafetensors(head, size) {
		return fmtSafetensors
	}
	if isProtoModel(head, name) {
		return fmtProtobuf
	}
	if looksLikeProto0Pickle(head, size, name) {
		return fmtPickle
	}
	if f := chatTemplateFile(head, name); f != fmtUnknown {
		return f
	}
	return fmtUnknown
}

// chatTemplateFile recognises the files that hold chat templates by name
// (text has no magic) together with their content: a JSON object for
// tokenizer_config.json and chat_template.json, text for a .jinja file, a
// Modelfile with a FROM or TEMPLATE line.
func chatTemplateFile(head []byte, name string) format {
	base := strings.ToLower(path.Base(name))
	text := len(head) > 0 && !bytes.ContainsRune(head, 0)
	switch {
	case !text:
		return fmtUnknown
	case base == "tokenizer_config.json" || base == "chat_template.json" || base == "processor_config.json":
		if t := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
			return fmtChatJSON
		}
	case strings.HasSuffix(base, ".jinja") || strings.HasSuffix(base, ".jinja2"):
		return fmtJinja
	case strings.HasSuffix(base, ".json"):
		// Any JSON object whose head names a chat_template key: configs
		// saved under other names (ModelAudit's test suite has dozens).
		// Also one whose head has a key ending in template(s) with a
		// Jinja tag (default_chat_template, prompt templates).
		if t := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' && (bytes.Contains(head, []byte(`"chat_template"`)) ||
			(bytes.Contains(head, []byte(`template"`)) || bytes.Contains(head, []byte(`templates"`))) && (bytes.Contains(head, []byte("{{")) || bytes.Contains(head, []byte("{%")))) {
			return fmtChatJSON
		}
	case strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml"):
		if reYAMLTemplate.Match(head) {
			return fmtChatYAML
		}
	case strings.HasSuffix(base, ".j2") || strings.HasSuffix(base, ".template") || strings.HasSuffix(base, ".tmpl"):
		// A Jinja file that loops over messages is a chat template;
		// other templates (Ansible's, a site's) are not the models check's.
		if reMessagesTag.Match(head) {
			return fmtJinja
		}
	case base == "modelfile" || strings.HasSuffix(base, ".modelfile"):
		if reModelfile.Match(head) {
			return fmtModelfile
		}
	}
	return fmtUnknown
}

var (
	reModelfile    = lazyregexp.New(`(?im)^\s*(FROM|TEMPLATE)\s`)
	reYAMLTemplate = lazyregexp.New(`(?m)^\s*chat_template\s*:`)
	reMessagesTag  = lazyregexp.New(`\{[%{]-?[^%}]*\bmessages\b`)
)

// isLzmaAlone matches the .lzma ("alone") header joblib's lzma compressor
// writes: properties byte 0x5d, a power-of-two dictionary size and an
// unknown (-1) or plausible uncompressed size.
func isLzmaAlone(h []byte) bool {
	if len(h) < 13 || h[0] != 0x5d {
		return false
	}
	dict := binary.LittleEndian.Uint32(h[1:5])
	if dict == 0 || dict&(dict-1) != 0 {
		return false
	}
	return binary.LittleEndian.Uint64(h[5:13]) == ^uint64(0) || h[12] == 0
}

func isZlib(h []byte) bool {
	return len(h) >= 2 && h[0] == 0x78 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0
}

// isSafetensors: an 8-byte little-endian header length that fits the file,
// then a JSON object.
func isSafetensors(h []byte, size int64) bool {
	if len(h) < 10 {
		return false
	}
	n := binary.LittleEndian.Uint64(h[:8])
	if n < 2 || (size > 0 && n > uint64(size-8)) || n > 100<<20 {
		return false
	}
	return h[8] == '{' && (bytes.HasPrefix(h[9:], []byte(`"`)) || bytes.HasPrefix(h[9:], []byte("}")) || h[9] == ' ' || h[9] == '\n')
}

// isProtoModel: protobuf has no magic, so a TensorFlow SavedModel, Keras
// metadata or an ONNX model is recognised by its name together with a head
// that walks as protobuf fields. Any field may come first (a serialiser
// writes them in field order, but a reader accepts any order): requiring
// saved_model_schema_version first let a crafted saved_model.pb escape.
func isProtoModel(h []byte, name string) bool {
	base := strings.ToLower(path.Base(name))
	if base != "saved_model.pb" && base != "keras_metadata.pb" && !strings.HasSuffix(base, ".onnx") && !strings.HasSuffix(base, ".pb") {
		return false
	}
	return protoHead(h)
}

// protoHead reports whether h starts with well-formed protobuf fields: each
// tag a field number and a wire type protobuf has (0, 1, 2, 5), each length
// inside h, except that the last field may run past the head.
func protoHead(h []byte) bool {
	fields := 0
	for off := 0; off < len(h); {
		tag, n := binary.Uvarint(h[off:])
		if n <= 0 {
			return fields > 0 && len(h)-off < binary.MaxVarintLen64 // cut by the head
		}
		num, wt := tag>>3, tag&7
		if num == 0 || num >= 1<<29 {
			return false
		}
		off += n
		switch wt {
		case 0:
			_, n := binary.Uvarint(h[off:])
			if n < 0 || n == 0 && len(h)-off >= binary.MaxVarintLen64 {
				return false
			}
			if n == 0 {
				return true
			}
			off += n
		case 1:
			off += 8
		case 5:
			off += 4
		case 2:
			l, n := binary.Uvarint(h[off:])
			if n < 0 || n == 0 && len(h)-off >= binary.MaxVarintLen64 {
				return false
			}
			if n == 0 || l > uint64(len(h)-off-n) {
				return true // the field runs past the head
			}
			off += n + int(l)
		default:
			return false
		}
		fields++
	}
	return fields > 0
}

// looksLikeProto0Pickle recognises protocol 0 and 1 pickles, which have no
// PROTO opcode: the head must walk as a pickle to STOP, or for a long way.
func looksLikeProto0Pickle(h []byte, size int64, name string) bool {
	if len(h) < 4 || !strings.ContainsRune("(c]})NIVSlLdKJGUTXp", rune(h[0])) {
		return false
	}
	res := pickle.Walk(bytes.NewReader(h), pickle.Limits{MaxStreams: 1})
	clean := len(res.Problems) == 0
	if clean && res.Ops >= 3 {
		return true // reached STOP within the head
	}
	if hasPickleName(name) && res.Ops >= 2 {
		return true
	}
	// Only truncation at the end of the head is acceptable for a long pickle.
	if len(res.Problems) == 1 && int64(len(h)) < size && res.Ops >= 64 && strings.HasPrefix(res.Problems[0].Msg, "truncated") {
		return true
	}
	return false
}
