package instr

import (
	"slices"
	"testing"
)

func TestShell(t *testing.T) {
	src := []string{
		"FROM x",
		"RUN --mount=type=cache,target=/root/.cache pip install \\",
		"    # a comment BuildKit drops",
		"",
		"    torch \\",
		"    numpy\r",
	}
	for _, c := range []struct {
		name      string
		start     int
		end       int
		keepBlank bool
		text      string
		lineOf    []int
		ok        bool
	}{
		{"continued, comments dropped", 2, 6, false, "pip install \\\n    torch \\\n    numpy", []int{2, 5, 6}, true},
		{"heredocs keep every line", 2, 6, true, "pip install \\\n    # a comment BuildKit drops\n\n    torch \\\n    numpy", []int{2, 3, 4, 5, 6}, true},
		{"the word alone", 1, 1, false, "x", []int{1}, true},
		{"out of range", 5, 9, false, "", nil, false},
		{"backwards", 3, 2, false, "", nil, false},
	} {
		text, lineOf, ok := Shell(src, c.start, c.end, c.keepBlank)
		if text != c.text || !slices.Equal(lineOf, c.lineOf) || ok != c.ok {
			t.Errorf("%s: %q %v %v, want %q %v %v", c.name, text, lineOf, ok, c.text, c.lineOf, c.ok)
		}
	}
	if Line([]int{2, 5, 6}, 2) != 5 || Line([]int{2, 5, 6}, 9) != 2 || Line(nil, 1) != 0 {
		t.Error("Line")
	}
}
