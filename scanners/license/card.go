package license

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxCardHead is how much of a README.md ParseCard reads: the Hub's
// metadata block comes first, and a longer one is not a card's.
const MaxCardHead = 64 << 10

// Card is what a model card's metadata (the YAML block that opens a
// README.md, https://huggingface.co/docs/hub/model-cards#model-card-metadata)
// says of licence and access.
type Card struct {
	// License is the normalised licence ("" when the card names none
	// that Normalize knows); Raw what the card wrote.
	License string
	Raw     string
	// Name and Link are license_name and license_link (for "other").
	Name, Link string
	// GatePrompt and GateFields are extra_gated_prompt and the names of
	// extra_gated_fields: what a gated repository asks before access.
	GatePrompt string
	GateFields []string
}

// cardMeta is the metadata block as YAML.
type cardMeta struct {
	License     yaml.Node      `yaml:"license"`
	LicenseName string         `yaml:"license_name"`
	LicenseLink string         `yaml:"license_link"`
	GatePrompt  string         `yaml:"extra_gated_prompt"`
	GateFields  map[string]any `yaml:"extra_gated_fields"`
}

// ParseCard reads the metadata block at the start of a README.md: a line
// "---", YAML, a line "---" within the first MaxCardHead bytes. ok is
// false when there is none (a README without metadata); err when the block
// is there but is not YAML the Hub would read.
func ParseCard(head []byte) (c Card, ok bool, err error) {
	block, ok := frontMatter(head)
	if !ok {
		return Card{}, false, nil
	}
	var m cardMeta
	if err := yaml.Unmarshal(block, &m); err != nil {
		return Card{}, true, fmt.Errorf("model card metadata: %w", err)
	}
	c.Name, c.Link = clip(m.LicenseName, 200), clip(m.LicenseLink, 500)
	c.GatePrompt = clip(m.GatePrompt, 500)
	for k := range m.GateFields {
		c.GateFields = append(c.GateFields, clip(k, 100))
	}
	slices.Sort(c.GateFields)
	c.GateFields = c.GateFields[:min(len(c.GateFields), 20)]
	var raws []string
	switch m.License.Kind {
	case yaml.ScalarNode:
		raws = []string{m.License.Value}
	case yaml.SequenceNode:
		for _, n := range m.License.Content[:min(len(m.License.Content), 20)] {
			if n.Kind == yaml.ScalarNode {
				raws = append(raws, n.Value)
			}
		}
	}
	ids := make([]string, 0, len(raws))
	for _, r := range raws {
		id := Normalize(r)
		if id == "" && strings.EqualFold(strings.TrimSpace(r), "other") {
			id = Other(c.Name)
		}
		ids = append(ids, id)
	}
	c.Raw = clip(strings.Join(raws, ", "), 200)
	if !slices.Contains(ids, "") {
		c.License = Join(ids)
	}
	return c, true, nil
}

// frontMatter returns the YAML between a first line "---" and the next
// line "---" (or "..."), within head.
func frontMatter(head []byte) ([]byte, bool) {
	head = head[:min(len(head), MaxCardHead)]
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	first, rest, ok := bytes.Cut(head, []byte("\n"))
	if !ok || string(bytes.TrimRight(first, " \t\r")) != "---" {
		return nil, false
	}
	for off := 0; off < len(rest); {
		line, _, _ := bytes.Cut(rest[off:], []byte("\n"))
		if l := string(bytes.TrimRight(line, " \t\r")); l == "---" || l == "..." {
			return rest[:off], true
		}
		off += len(line) + 1
	}
	return nil, false
}

// clip bounds s to n bytes, on a rune boundary, with control characters
// made spaces: card text goes into reports.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
