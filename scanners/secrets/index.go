package secrets

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/zricethezav/gitleaks/v8/config"
)

// indexed is a built-in rules file read in two steps, for lazy rules: now,
// what choosing and listing rules takes (each rule's id, description,
// keywords and skipReport) and every table outside the [[rules]] blocks;
// a rule's whole block only when it is compiled. Reading all of gitleaks'
// 98 kB file (regexps, the generic rule's 1,400 stop words) was most of a
// one-script process's set-up. TestIndexBuiltin checks that the two steps
// read both built-in files exactly as readBuiltin does.
type indexed struct {
	// vc holds the file's tables outside [[rules]], and Rules with only
	// ID, Description, Keywords and SkipReport set.
	vc     config.ViperConfig
	ext    config.Extend
	blocks map[string][]byte // each rule's [[rules]] block (sub-tables included), by id
}

// indexKey reports whether a line of a rule's own table sets a key the
// index reads.
func indexKey(line []byte) bool {
	l := bytes.TrimLeft(line, " \t")
	for _, k := range []string{"id", "description", "keywords", "skipReport"} {
		if rest, ok := bytes.CutPrefix(l, []byte(k)); ok && bytes.HasPrefix(bytes.TrimLeft(rest, " \t"), []byte("=")) {
			return true
		}
	}
	return false
}

// tableHeader returns the table header a line holds: [name] or [[name]]
// of bare keys, maybe indented, maybe with a comment after it.
func tableHeader(line []byte) (string, bool) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '[' {
		return "", false
	}
	h := string(t)
	if i := strings.IndexByte(h, '#'); i >= 0 {
		h = strings.TrimSpace(h[:i])
	}
	name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(h, "["), "["), "]"), "]")
	if name == "" || len(h)-len(name) != 2 && len(h)-len(name) != 4 {
		return "", false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return "", false
		}
	}
	return h, true
}

// indexBuiltin cuts a built-in rules file into its [[rules]] blocks. It
// refuses a file it cannot cut with certainty, and composite rules
// ([[rules.required]]), which are not compiled lazily; the caller then
// reads the file whole.
func indexBuiltin(b []byte) (*indexed, error) {
	var head, keys bytes.Buffer
	var starts []int // of each [[rules]] block
	var ends []int
	inRule, inTop, inArray := false, false, false
	for off := 0; off < len(b); {
		end := len(b)
		if i := bytes.IndexByte(b[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		line := b[off:end]
		if inArray {
			keys.Write(line)
			inArray = !bytes.Contains(line, []byte("]"))
			off = end
			continue
		}
		if h, ok := tableHeader(line); ok {
			switch {
			case h == "[[rules]]":
				if inRule {
					ends = append(ends, off)
				}
				starts = append(starts, off)
				inRule, inTop = true, true
				keys.WriteString("[[rules]]\n")
			case strings.HasPrefix(h, "[[rules.") || strings.HasPrefix(h, "[rules."):
				if !inRule || strings.HasPrefix(h, "[[rules.required") {
					return nil, fmt.Errorf("%s: not indexed", h)
				}
				inTop = false
			default:
				if inRule {
					ends = append(ends, off)
				}
				inRule, inTop = false, false
			}
		} else if inTop && indexKey(line) {
			keys.Write(line)
			if bytes.HasPrefix(bytes.TrimSpace(line), []byte("keywords")) {
				inArray = !bytes.Contains(line, []byte("]"))
			}
		}
		if !inRule {
			head.Write(line)
		}
		off = end
	}
	if inArray {
		return nil, fmt.Errorf("unterminated keywords")
	}
	if inRule {
		ends = append(ends, len(b))
	}
	vc, ext, err := readBuiltin(head.Bytes())
	if err != nil {
		return nil, err
	}
	var ks struct {
		Rules []struct {
			ID, Description string
			Keywords        []string
			SkipReport      bool
		}
	}
	if err := toml.Unmarshal(keys.Bytes(), &ks); err != nil {
		return nil, err
	}
	if len(vc.Rules) > 0 || len(ks.Rules) != len(starts) || len(ends) != len(starts) {
		return nil, fmt.Errorf("%d [[rules]] blocks, %d rules read", len(starts), len(ks.Rules))
	}
	ix := &indexed{vc: vc, ext: ext, blocks: make(map[string][]byte, len(starts))}
	ix.vc.Rules = slices.Grow(ix.vc.Rules, len(ks.Rules))[:len(ks.Rules)]
	for i, r := range ks.Rules {
		if r.ID == "" || ix.blocks[r.ID] != nil {
			return nil, fmt.Errorf("rule %d: id %q", i, r.ID)
		}
		ix.blocks[r.ID] = b[starts[i]:ends[i]]
		vr := &ix.vc.Rules[i]
		vr.ID, vr.Description, vr.Keywords, vr.SkipReport = r.ID, r.Description, r.Keywords, r.SkipReport
	}
	return ix, nil
}

// rules returns the file's config with the whole rules of ids (those of
// the file; in the order given) instead of the index's.
func (ix *indexed) rules(ids []string) (config.ViperConfig, error) {
	var doc []byte
	for _, id := range ids {
		if blk := ix.blocks[id]; blk != nil {
			doc = append(append(doc, blk...), '\n')
		}
	}
	full, _, err := readBuiltin(doc)
	if err != nil {
		return config.ViperConfig{}, err
	}
	vc := ix.vc
	vc.Rules = full.Rules
	return vc, nil
}
