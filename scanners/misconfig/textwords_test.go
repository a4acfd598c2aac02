package misconfig

import (
	"strings"
	"testing"
)

// TestTextWords: the one-pass search finds what the two searches it
// replaces find, with each set's words alone, both, in either order, at
// the start and end, in upper case, and neither.
func TestTextWords(t *testing.T) {
	filler := "def forward(self, x):\n    return self.linear(x)  # scaled\n"
	var texts []string
	texts = append(texts, "", filler, strings.Repeat(filler, 50))
	words := append(commandWordList(), minerTraceWordList()...)
	for i, w := range words {
		other := words[(i*7+3)%len(words)]
		texts = append(texts, w, filler+w, w+filler, filler+strings.ToUpper(w)+filler,
			filler+w+filler+other, other+filler+w, w[:len(w)-1]+filler)
	}
	for _, s := range texts {
		b := []byte(s)
		cmds, traces := textWords(b)
		if want := mayHaveCommands(b); cmds != want {
			t.Errorf("textWords(%q): commands %v, mayHaveCommands %v", s, cmds, want)
		}
		if want := minerTraceWords().NextBytes(b, 0) >= 0; traces != want {
			t.Errorf("textWords(%q): traces %v, minerTraceWords %v", s, traces, want)
		}
	}
}

func FuzzTextWords(f *testing.F) {
	f.Add([]byte("python -m http.server\nxmrig --donate-level 1\n"))
	f.Add([]byte("stratum+tcp://pool.example.test:3333"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmds, traces := textWords(b)
		if cmds != mayHaveCommands(b) || traces != (minerTraceWords().NextBytes(b, 0) >= 0) {
			t.Fatalf("textWords(%q) = %v, %v", b, cmds, traces)
		}
	})
}
