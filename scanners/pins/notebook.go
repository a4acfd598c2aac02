package pins

import (
	"sort"
	"strings"

	"github.com/mlwarden/mlwarden/internal/jsontok"
)

// scanNotebook checks a Jupyter notebook's code cells as Python, and its
// shell escapes (!pip install …, %pip, %conda, %%bash cells) as shell, at the
// notebook file's lines. It walks the JSON tokens so that each source line
// keeps the line it has in the file; the values no cell source is in
// (outputs, metadata) are read past without being decoded.
func scanNotebook(data []byte, r *rep) {
	lines := lineStarts(data)
	lineAt := func(off int64) int { return sort.SearchInts(lines, int(off)+1) }
	type frame struct {
		obj       bool
		key       string
		expectKey bool
	}
	type cell struct {
		typ   string
		src   []string
		lines []int
	}
	var stack []frame
	var cur *cell
	st := newShellState()
	defer st.finish()
	dec := jsontok.New(data)
	for {
		// Path: {cells: [ {cell_type, source: [ "…", … ] } ] }
		inCells := len(stack) >= 2 && stack[0].key == "cells" && !stack[1].obj
		top := len(stack) - 1
		if top >= 0 && stack[top].obj && !stack[top].expectKey {
			// A member's value: skip the notebook's other members and a
			// cell's other than its type and source.
			if k := len(stack); k == 1 && stack[0].key != "cells" ||
				k == 3 && inCells && stack[2].key != "cell_type" && stack[2].key != "source" {
				if err := dec.Skip(); err != nil {
					// As below.
					if cur != nil && cur.typ == "code" {
						notebookCell(cur.src, cur.lines, r, st)
					}
					return
				}
				stack[top].expectKey = true
				continue
			}
		}
		tok, err := dec.Next()
		if err != nil {
			// The end, or a truncated or broken notebook: checked as far as
			// it parsed, including the cell it stopped in.
			if cur != nil && cur.typ == "code" {
				notebookCell(cur.src, cur.lines, r, st)
			}
			return
		}
		end := dec.Offset()
		switch tok.Kind {
		case '{', '[', '}', ']':
			t := tok.Kind
			switch t {
			case '{', '[':
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].expectKey = true
				}
				stack = append(stack, frame{obj: t == '{', expectKey: t == '{'})
				if t == '{' && len(stack) == 3 && inCells {
					cur = &cell{}
				}
			case '}', ']':
				if len(stack) == 3 && inCells && cur != nil {
					if cur.typ == "code" {
						notebookCell(cur.src, cur.lines, r, st)
					}
					cur = nil
				}
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].expectKey = true
				}
			}
			continue
		case '"':
			t := tok.Str
			if top >= 0 && stack[top].obj && stack[top].expectKey {
				stack[top].key, stack[top].expectKey = t, false
				continue
			}
			if cur != nil && inCells {
				switch {
				case len(stack) == 3 && stack[2].key == "cell_type":
					cur.typ = t
				case len(stack) == 3 && stack[2].key == "source",
					len(stack) == 4 && stack[2].key == "source" && !stack[3].obj:
					cur.src = append(cur.src, t)
					cur.lines = append(cur.lines, lineAt(end-1))
				}
			}
		}
		if top := len(stack) - 1; top >= 0 && stack[top].obj {
			stack[top].expectKey = true
		}
	}
}

// notebookCell checks one code cell: src are its source strings and lines
// the file line of each.
func notebookCell(src []string, lines []int, r *rep, st *shellState) {
	var py strings.Builder
	var pyLines []int
	bashCell := len(src) > 0 && (strings.HasPrefix(src[0], "%%bash") || strings.HasPrefix(src[0], "%%sh") || strings.HasPrefix(src[0], "%%script bash"))
	for i, s := range src {
		parts := strings.SplitAfter(s, "\n")
		for _, l := range parts {
			if l == "" {
				continue
			}
			ln := lines[i]
			t := strings.TrimSpace(l)
			switch {
			case bashCell && !strings.HasPrefix(t, "%%"):
				(&shellScan{st: st, r: r}).nested(l, ln, "")
				l = "\n"
			case strings.HasPrefix(t, "!"):
				(&shellScan{st: st, r: r}).nested(t[1:], ln, "")
				l = "\n"
			case strings.HasPrefix(t, "%pip ") || strings.HasPrefix(t, "%conda ") || strings.HasPrefix(t, "%sh "):
				(&shellScan{st: st, r: r}).nested(strings.TrimPrefix(t[1:], "sh "), ln, "")
				l = "\n"
			case strings.HasPrefix(t, "%"):
				l = "\n" // other magics are not Python
			}
			if !strings.HasSuffix(l, "\n") {
				l += "\n"
			}
			py.WriteString(l)
			pyLines = append(pyLines, ln)
		}
	}
	scanPythonCalls([]byte(py.String()), r.subMap(func(l int) int {
		if l >= 1 && l <= len(pyLines) {
			return pyLines[l-1]
		}
		return 0
	}), st)
}
