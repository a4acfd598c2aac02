package pins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// scanConda checks a conda environment file: conda specs need a version,
// the pip: section is read as requirements.
func scanConda(data []byte, r *rep) {
	docs, err := yamlDocs(data)
	if err != nil {
		r.add(ruleUnparsed, yamlErrLine(err, data), "", fmt.Sprintf("environment file could not be parsed as YAML (%v), so its packages were not checked for pins; fix the syntax", err))
		return
	}
	for _, doc := range docs {
		deps := mapGet(doc, "dependencies")
		if deps == nil || deps.Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range deps.Content {
			item = deref(item)
			switch item.Kind {
			case yaml.ScalarNode:
				if !condaPinned(item.Value) {
					r.add(ruleCondaUnpinned, item.Line, item.Value, fmt.Sprintf("conda package %q has no version, so the solver installs the newest build from every channel; pin it: %s=<version>=<build> (conda env export, or conda-lock)", item.Value, condaName(item.Value)))
				}
			case yaml.MappingNode:
				pip := mapGet(item, "pip")
				if pip == nil || pip.Kind != yaml.SequenceNode {
					continue
				}
				// The entries are requirements-file lines: check them as one
				// file so that hashes and -r are understood together.
				var text strings.Builder
				var lines []int
				for _, p := range pip.Content {
					p = deref(p)
					if p.Kind == yaml.ScalarNode {
						text.WriteString(p.Value + "\n")
						lines = append(lines, p.Line)
					}
				}
				sub := r.subMap(func(l int) int {
					if l >= 1 && l <= len(lines) {
						return lines[l-1]
					}
					return 0
				})
				(&Scanner{}).requirements(context.Background(), r.s.a, []byte(text.String()), sub, nil, "", map[string]bool{}, maxIncludeDepth)
			}
		}
	}
}

// maxYAMLNodes bounds the nodes visited in one file, aliases included, so
// that an alias bomb cannot make the walk explode.
const maxYAMLNodes = 1 << 20

// yamlDocs decodes every document of a YAML stream.
func yamlDocs(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
			docs = append(docs, deref(n.Content[0]))
		}
	}
}

func yamlErrLine(err error, data []byte) int {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return 0
	}
	s := err.Error()
	if _, after, ok := strings.Cut(s, "line "); ok {
		n := 0
		for _, c := range after {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		// The parser counts a lone \r as a line break; findings count \n.
		return min(n, bytes.Count(data, []byte{'\n'})+1)
	}
	return 0
}

// deref follows an alias to its anchor.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// mapGet returns a mapping's value for key, following aliases and merge
// keys (<<: *anchor).
func mapGet(m *yaml.Node, key string) *yaml.Node {
	return mapGetDepth(deref(m), key, 0)
}

func mapGetDepth(m *yaml.Node, key string, depth int) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode || depth > 8 {
		return nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Value == key && k.Tag != "!!merge" {
			return deref(m.Content[i+1])
		}
		if k.Value == "<<" {
			merges = append(merges, deref(m.Content[i+1]))
		}
	}
	for _, mg := range merges {
		switch mg.Kind {
		case yaml.MappingNode:
			if v := mapGetDepth(mg, key, depth+1); v != nil {
				return v
			}
		case yaml.SequenceNode:
			for _, e := range mg.Content {
				if v := mapGetDepth(deref(e), key, depth+1); v != nil {
					return v
				}
			}
		}
	}
	return nil
}
