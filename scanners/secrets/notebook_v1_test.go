package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// decodeNotebookV1 is decodeNotebook as it was written on encoding/json's
// Decoder.Token, kept as the oracle of FuzzNotebook and
// TestNotebookDecodersAgree: the faster walk must decode every input alike.
func decodeNotebookV1(data []byte) (text []byte, lines []nbLine, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []nbFrame
	fileLine, lastOff := 1, 0
	var buf bytes.Buffer
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		off := int(dec.InputOffset())
		fileLine += bytes.Count(data[lastOff:off], []byte{'\n'})
		lastOff = off

		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].wantKey {
			// A key, or the end of the object.
			if _, ok := tok.(json.Delim); ok {
				stack = stack[:top]
				nbValueDone(stack)
				continue
			}
			k, _ := tok.(string)
			stack[top].key, stack[top].wantKey = k, false
			continue
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if len(stack) >= maxNotebookDepth {
					return nil, nil, errors.New("notebook JSON nested too deep")
				}
				stack = append(stack, nbFrame{object: v == '{', wantKey: v == '{'})
			default: // ']' ('}' is handled with the keys)
				stack = stack[:top]
				nbValueDone(stack)
			}
		case string:
			cur := nbPath(stack)
			nbValueDone(stack)
			if skipNotebookValue(cur) {
				continue
			}
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
			for _, l := range strings.Split(strings.TrimSuffix(v, "\n"), "\n") {
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

// TestNotebookDecodersAgree decodes skipped binary data, cut where a
// string ends and inside one, with both decoders.
func TestNotebookDecodersAgree(t *testing.T) {
	inputs := [][]byte{
		[]byte(`{"cells":[{"cell_type":"code","source":["a\n","b"],"outputs":[{"output_type":"display_data","data":{"image/png":"iVBORw0KGgo=\n","application/octet-stream":"AAAA","application/vnd.jupyter.widget-view+json":{"model_id":"x"},"text/plain":["<Figure>"]}}],"attachments":{"a.png":{"image/png":"AAAA"}}}],"metadata":{"kernelspec":{"name":"python3"}}}`),
		[]byte(`{"cells":[{"source":"x","outputs":[{"data":{"image/png":"AAAA`),
		[]byte(`{"cells":[{"source":"x","outputs":[{"data":{"image/png":"AAAA"`),
		[]byte(`{"cells":[{"source":"x","outputs":[{"data":{"image/png":"A\u00`),
		[]byte(`{"cells":{"3":{"source":"y"}},"data":{"image/jpeg":["x","y"]}}`),
	}
	for _, in := range inputs {
		text, lines, err := decodeNotebook(in)
		wantText, wantLines, wantErr := decodeNotebookV1(in)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(text, wantText) || !slices.Equal(lines, wantLines) {
			t.Errorf("decoders disagree on %.80q:\nnow %q %v\nencoding/json %q %v", in, text, err, wantText, wantErr)
		}
	}
}
