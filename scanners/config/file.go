package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners/suppress"
)

// FileName is the config file picked up from a scanned directory.
const FileName = ".mlwarden.yaml"

// maxFile bounds the config file read.
const maxFile = 1 << 20

// File is a config file in .mlwarden.yaml format, read and checked.
type File struct {
	// Path is the file as named (on the command line, or found in a
	// scanned directory).
	Path string
	// Ignore are its ignore entries.
	Ignore []suppress.Ignore
	// FromTarget is set when the file was found in a scanned directory
	// rather than named with --config or found in the working directory.
	FromTarget bool
	// Refused are the settings a config found in a scanned directory set
	// but may not (Setting.UserOnly, or a path that leads out of the
	// directory): left out of the resolved values, each a warning.
	Refused []Refusal

	data []byte
	keys map[string]keyNode // every setting key present, by dotted key
}

type keyNode struct {
	line  int
	value *yaml.Node
}

// Dir is the directory relative paths in the file are relative to.
func (f *File) Dir() string {
	if f == nil || f.Path == "" {
		return "."
	}
	return filepath.Dir(f.Path)
}

// Owner is a section of the file that another package decodes: Into is a
// pointer to its type, decoded strictly (unknown keys are errors with their
// line) when the file is read. The signatures check owns "signatures", the
// admission server "serve".
type Owner struct {
	Key  string
	Into any
}

// Load reads the config file at path.
func Load(path string, owners ...Owner) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return read(path, f, owners)
}

func read(name string, r io.Reader, owners []Owner) (*File, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("config %s: larger than %d bytes", name, maxFile)
	}
	return Parse(name, data, owners...)
}

// Find returns the config file to use for targets: explicit when set;
// otherwise .mlwarden.yaml in the first directory target that has one (not
// when noTarget is set: CI on an untrusted pull request), opened inside the
// directory so that a symlink cannot lead out of it; otherwise
// .mlwarden.yaml in the working directory; otherwise nil.
func Find(explicit string, targets []string, noTarget bool, owners ...Owner) (*File, error) {
	if explicit != "" {
		return Load(explicit, owners...)
	}
	if !noTarget {
		for _, t := range targets {
			if scheme, _, ok := strings.Cut(t, ":"); ok && slices.Contains(notDirSchemes, scheme) {
				continue // an image, a repository's history, a hub repository, a cluster, a file: never their config
			}
			dir := strings.TrimPrefix(t, "dir:")
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				continue
			}
			f, err := findIn(dir, owners)
			if err != nil || f != nil {
				return f, err
			}
		}
	}
	if fi, err := os.Lstat(FileName); err == nil && fi.Mode().IsRegular() {
		return Load(FileName, owners...)
	}
	return nil, nil
}

// notDirSchemes are the target schemes (source.Schemes) that are not a
// directory on disk: their .mlwarden.yaml, if they have one, is the
// scanned thing's, never the user's.
var notDirSchemes = []string{"registry", "oci", "docker-archive", "git", "hf", "k8s", "file"}

// findIn reads dir's .mlwarden.yaml through an os.Root: a symlink that
// leaves dir is an error, never followed.
func findIn(dir string, owners []Owner) (*File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil
	}
	defer root.Close()
	name := filepath.Join(dir, FileName)
	fi, err := root.Lstat(FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, errNoPath(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// os.Root follows links that stay inside; one that leaves is
		// refused by Open below.
		if _, err := root.Stat(FileName); err != nil {
			return nil, fmt.Errorf("config %s: a symlink that leads out of %s: not read", name, dir)
		}
	}
	f, err := root.Open(FileName)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, errNoPath(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("config %s: not a regular file", name)
	}
	cf, err := read(name, f, owners)
	if cf != nil {
		cf.FromTarget = true
		cf.refuse(root)
	}
	return cf, err
}

// Refusal is a setting of a scanned directory's own config that was not
// taken.
type Refusal struct {
	Key  string
	Line int
	// Why says what the setting would have let the directory choose.
	Why string
	// Instead names where the user may set it (flag, variable).
	Instead string
}

// String is the warning: the file, the line, the key, why, and where to
// set it instead; never the value.
func (r Refusal) String(file string) string {
	return fmt.Sprintf("config %s: line %d: %s: not taken from the scanned directory's own config (%s); %s", file, r.Line, r.Key, r.Why, r.Instead)
}

// refuse drops what a config found in a scanned directory may not set: a
// UserOnly setting (where credentials go, which cached results are trusted,
// what the network is asked for, memory and download ceilings), and a path
// setting that names a file outside the directory (absolute, through ..,
// or a symlink out: root refuses those). What is dropped is kept in
// Refused, so the front end warns and the report notes it.
func (f *File) refuse(root *os.Root) {
	for _, s := range All() {
		if s.Key == "" {
			continue
		}
		kn, ok := f.keys[s.Key]
		if !ok {
			continue
		}
		instead := "set it with --" + s.Name
		if e := s.Env(); e != "" {
			instead += ", " + e
		}
		instead += " or in the file --config names"
		switch {
		case s.UserOnly != "":
			f.Refused = append(f.Refused, Refusal{Key: s.Key, Line: kn.line, Why: s.UserOnly, Instead: instead})
		case s.Type == Path:
			raw, _, _ := f.lookup(s.Key)
			if len(raw) == 0 || raw[len(raw)-1] == "" {
				continue
			}
			p := raw[len(raw)-1]
			if _, err := root.Stat(p); err == nil && !filepath.IsAbs(p) {
				continue
			}
			f.Refused = append(f.Refused, Refusal{Key: s.Key, Line: kn.line, Instead: instead,
				Why: "it would name a file outside the scanned directory"})
		default:
			continue
		}
		delete(f.keys, s.Key)
	}
}

var yamlPrefix = lazyregexp.New(`^yaml: (?:unmarshal errors:\n\s*)?`)

// cleanYAMLError turns a YAML decoder error into one line without the
// "yaml:" prefix and without the offending value, which may be a secret
// written in the wrong place.
func cleanYAMLError(err error) string {
	msg := yamlPrefix.ReplaceAllString(err.Error(), "")
	msg = regexp.MustCompile("`[^`]*`").ReplaceAllString(msg, "the value")
	msg = regexp.MustCompile(`in type \S+`).ReplaceAllString(msg, "")
	return strings.Join(strings.Fields(msg), " ")
}

// Parse reads a config file from data; name is used in messages and for
// relative paths. Every key must be a setting's key, "ignore", or an
// owner's section; every setting's value is parsed and checked (a file it
// names must exist).
func Parse(name string, data []byte, owners ...Owner) (*File, error) {
	f := &File{Path: name, data: data, keys: map[string]keyNode{}}
	fail := func(line int, format string, args ...any) error {
		return fmt.Errorf("config %s: line %d: %s", name, line, fmt.Sprintf(format, args...))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %s", name, cleanYAMLError(err))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return f, nil // empty
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
			return f, nil
		}
		return nil, fail(top.Line, "want a mapping of settings (key: value)")
	}
	sections, settingKeys := keyTable()
	owned := map[string]bool{"ignore": true}
	for _, o := range owners {
		owned[o.Key] = true
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if seen[k.Value] {
			return nil, fail(k.Line, "%s given twice", k.Value)
		}
		seen[k.Value] = true
		switch {
		case owned[k.Value]:
			continue
		case settingKeys[k.Value]:
			f.keys[k.Value] = keyNode{line: k.Line, value: v}
		case sections[k.Value] != nil:
			if v.Kind != yaml.MappingNode {
				if v.Tag == "!!null" {
					continue
				}
				return nil, fail(k.Line, "%s: want a mapping (valid keys: %s)", k.Value, strings.Join(sections[k.Value], ", "))
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				sk := v.Content[j]
				if !slices.Contains(sections[k.Value], sk.Value) {
					return nil, fail(sk.Line, "unknown key %q in %s (valid: %s)", sk.Value, k.Value, strings.Join(sections[k.Value], ", "))
				}
				f.keys[k.Value+"."+sk.Value] = keyNode{line: sk.Line, value: v.Content[j+1]}
			}
		default:
			return nil, fail(k.Line, "unknown key %q (valid keys: %s)", k.Value, strings.Join(validTop(sections, settingKeys, owned), ", "))
		}
	}
	// Check every setting's value now, whichever command reads the file.
	for _, s := range All() {
		if s.Key == "" {
			continue
		}
		raw, line, ok := f.lookup(s.Key)
		if !ok {
			continue
		}
		if raw == nil && f.keys[s.Key].value.Kind != yaml.ScalarNode {
			return nil, fail(line, "%s: want a value or a list of values", s.Key)
		}
		if s.Type == List && len(raw) == 0 {
			return nil, fail(line, "%s: empty list (valid: %s)", s.Key, choiceList(s.Choices))
		}
		val := Value{Setting: s, Raw: raw}
		if s.Type == Path {
			for i, p := range val.Raw {
				if p != "" && !filepath.IsAbs(p) {
					val.Raw[i] = filepath.Join(f.Dir(), p)
				}
			}
		}
		if s.Type != List && s.Type != Strings && f.keys[s.Key].value.Kind != yaml.ScalarNode {
			return nil, fail(line, "%s: want one value, not a list", s.Key)
		}
		if err := val.parse(); err != nil {
			return nil, fail(line, "%s: %v", s.Key, err)
		}
	}
	// Ignore entries, then the owners' sections, decoded strictly from the
	// original text so that their errors keep their lines.
	var ig struct {
		Ignore []suppress.Ignore `yaml:"ignore"`
	}
	if err := f.DecodeSection("ignore", &ig.Ignore); err != nil {
		return nil, err
	}
	f.Ignore = ig.Ignore
	for _, o := range owners {
		if err := f.DecodeSection(o.Key, o.Into); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// keyTable lists the top-level setting keys and, for each section, its keys.
func keyTable() (sections map[string][]string, top map[string]bool) {
	sections, top = map[string][]string{}, map[string]bool{}
	for _, s := range All() {
		if s.Key == "" {
			continue
		}
		if sec, k, ok := strings.Cut(s.Key, "."); ok {
			if !slices.Contains(sections[sec], k) {
				sections[sec] = append(sections[sec], k)
			}
			continue
		}
		top[s.Key] = true
	}
	return sections, top
}

func validTop(sections map[string][]string, top, owned map[string]bool) []string {
	var out []string
	for k := range top {
		out = append(out, k)
	}
	for k := range sections {
		out = append(out, k)
	}
	for k := range owned {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lookup returns a setting's value as written: one scalar, or a list's
// scalars (nil when the node is neither); a relative File is not resolved.
func (f *File) lookup(key string) ([]string, int, bool) {
	if f == nil {
		return nil, 0, false
	}
	kn, ok := f.keys[key]
	if !ok {
		return nil, 0, false
	}
	switch kn.value.Kind {
	case yaml.ScalarNode:
		if kn.value.Tag == "!!null" {
			return nil, kn.line, false
		}
		return []string{kn.value.Value}, kn.line, true
	case yaml.SequenceNode:
		out := []string{}
		for _, e := range kn.value.Content {
			if e.Kind != yaml.ScalarNode {
				return nil, kn.line, true
			}
			out = append(out, e.Value)
		}
		return out, kn.line, true
	}
	return nil, kn.line, true
}

// Has reports whether the file sets key (a setting's dotted key or a
// section).
func (f *File) Has(key string) bool {
	if f == nil {
		return false
	}
	if _, ok := f.keys[key]; ok {
		return true
	}
	var probe map[string]yaml.Node
	if yaml.Unmarshal(f.data, &probe) != nil {
		return false
	}
	_, ok := probe[key]
	return ok
}

// DecodeSection decodes the top-level section key strictly into v (a
// pointer): unknown keys and wrong types are errors naming the file and the
// line. An absent section leaves v as it is.
func (f *File) DecodeSection(key string, v any) error {
	if f == nil || len(f.data) == 0 {
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("config: DecodeSection(%q) needs a non-nil pointer", key)
	}
	// A document type with just this section and a catch-all for the rest,
	// decoded from the original text: the decoder then checks the section's
	// keys itself and reports their real lines.
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "Section", Type: rv.Elem().Type(), Tag: reflect.StructTag(`yaml:"` + key + `"`)},
		{Name: "Rest", Type: reflect.TypeFor[map[string]yaml.Node](), Tag: `yaml:",inline"`},
	})
	doc := reflect.New(typ)
	doc.Elem().Field(0).Set(rv.Elem())
	dec := yaml.NewDecoder(bytes.NewReader(f.data))
	dec.KnownFields(true)
	if err := dec.Decode(doc.Interface()); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config %s: %s: %s", f.Path, key, cleanYAMLError(err))
	}
	rv.Elem().Set(doc.Elem().Field(0))
	return nil
}
