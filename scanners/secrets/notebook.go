package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/internal/jsontok"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

func isNotebook(p string) bool { return strings.HasSuffix(scanners.Base(p), ".ipynb") }

// nbLine is one line of decoded notebook text and where it came from.
type nbLine struct {
	fileLine int    // 1-based line in the .ipynb file
	cell     int    // 0-based cell index, -1 outside cells
	part     string // "source", "output", "metadata"
}

// maxNotebookDepth bounds JSON nesting in a notebook.
const maxNotebookDepth = 64

// decodeNotebook decodes every string in a notebook's JSON (cell sources,
// outputs, tracebacks, metadata), skipping binary output data (image/*,
// application/* other than JSON), and returns the decoded text, one entry of
// lines per text line. A hand-written walk over JSON tokens (internal/jsontok:
// encoding/json's Decoder.Token, faster) because nbformat has no Go library
// and the line of each string in the file is needed for the report; the
// binary data is skipped without being unquoted.
func decodeNotebook(data []byte) (text []byte, lines []nbLine, err error) {
	dec := jsontok.New(data)
	var stack []nbFrame
	fileLine, lastOff := 1, 0
	advance := func() {
		off := int(dec.Offset())
		fileLine += bytes.Count(data[lastOff:off], []byte{'\n'})
		lastOff = off
	}
	var buf bytes.Buffer
	for {
		top := len(stack) - 1
		var cur []string // the path of a string value
		if k := dec.Peek(); k == '"' && (top < 0 || !stack[top].wantKey) {
			// A string value: binary data is read past, not decoded.
			if cur = nbPath(stack); skipNotebookValue(cur) {
				if err := dec.Skip(); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					return nil, nil, err
				}
				advance()
				nbValueDone(stack)
				continue
			}
		}
		tok, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		advance()

		if top >= 0 && stack[top].object && stack[top].wantKey {
			// A key, or the end of the object.
			if tok.Kind != '"' {
				stack = stack[:top]
				nbValueDone(stack)
				continue
			}
			stack[top].key, stack[top].wantKey = tok.Str, false
			continue
		}
		switch tok.Kind {
		case '{', '[':
			if len(stack) >= maxNotebookDepth {
				return nil, nil, errors.New("notebook JSON nested too deep")
			}
			stack = append(stack, nbFrame{object: tok.Kind == '{', wantKey: tok.Kind == '{'})
		case ']': // '}' is handled with the keys
			stack = stack[:top]
			nbValueDone(stack)
		case '"':
			nbValueDone(stack)
			cell, part := -1, "metadata"
			if len(cur) >= 3 && cur[0] == "cells" {
				fmt.Sscan(cur[1], &cell)
				switch cur[2] {
				case "source":
					part = "source"
				case "outputs":
					part = "output"
				}
			}
			for _, l := range strings.Split(strings.TrimSuffix(tok.Str, "\n"), "\n") {
				buf.WriteString(l)
				buf.WriteByte('\n')
				lines = append(lines, nbLine{fileLine: fileLine, cell: cell, part: part})
			}
		default:
			nbValueDone(stack)
		}
	}
	return buf.Bytes(), lines, nil
}

// nbFrame is one open JSON object or array.
type nbFrame struct {
	object  bool
	key     string // the current key (objects)
	index   int    // the current index (arrays)
	wantKey bool   // the next token is a key or '}'
}

// nbPath is the path of keys and indexes from the root to the current value.
func nbPath(stack []nbFrame) []string {
	p := make([]string, len(stack))
	for i, f := range stack {
		if f.object {
			p[i] = f.key
		} else {
			p[i] = strconv.Itoa(f.index)
		}
	}
	return p
}

// nbValueDone advances the enclosing container past a value.
func nbValueDone(stack []nbFrame) {
	if n := len(stack); n > 0 {
		if stack[n-1].object {
			stack[n-1].wantKey = true
		} else {
			stack[n-1].index++
		}
	}
}

// skipNotebookValue reports whether the string at path is binary output data
// (a base64 image, a widget's state) rather than text.
func skipNotebookValue(path []string) bool {
	for i, p := range path {
		if p == "data" && i+1 < len(path) {
			mime := path[i+1]
			return strings.HasPrefix(mime, "image/") || (strings.HasPrefix(mime, "application/") && !strings.HasSuffix(mime, "json"))
		}
		if p == "attachments" {
			return true
		}
	}
	return false
}

// scanNotebook scans a notebook's decoded strings and reports findings at the
// line of the .ipynb file, with the cell index in the message. ok is false
// when data is not JSON.
func (s *Scanner) scanNotebook(ctx context.Context, a *scanners.Artifact, data []byte) ([]scanners.Finding, bool) {
	text, lines, err := decodeNotebook(data)
	if err != nil {
		return nil, false
	}
	gfs := s.detect(ctx, a, text, 1)
	return s.convert(a, gfs, func(f engine.Finding) (int, string) {
		i := f.StartLine - 1
		if i < 0 || i >= len(lines) {
			return 0, "in notebook " + a.Path
		}
		l := lines[i]
		if l.cell < 0 {
			return l.fileLine, fmt.Sprintf("in the metadata of notebook %s", a.Path)
		}
		return l.fileLine, fmt.Sprintf("in cell %d (%s) of notebook %s", l.cell, l.part, a.Path)
	}, around{text: text, first: 1}), true
}
