package misconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// textCommandsAll is textCommands without its line gate: every logical
// line split into words (the oracle of TestTextCommandsGate).
func textCommandsAll(data []byte) []cmdLine {
	var out []cmdLine
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		start := i
		l := lines[i]
		for strings.HasSuffix(strings.TrimRight(l, " \t\r"), "\\") && i+1 < len(lines) {
			l = strings.TrimSuffix(strings.TrimRight(l, " \t\r"), "\\") + " " + lines[i+1]
			i++
		}
		if len(l) > 64<<10 {
			l = l[:64<<10]
		}
		if words := splitWords(l, nil); len(words) > 0 {
			out = append(out, cmdLine{line: start + 1, words: words})
		}
	}
	return out
}

// interestingLines lists the lines of cls that interesting accepts.
func interestingLines(cls []cmdLine) []string {
	var out []string
	for _, cl := range cls {
		if interesting(cl.words) {
			out = append(out, fmt.Sprintf("%d %q", cl.line, cl.words))
		}
	}
	return out
}

func compareTextCommands(t *testing.T, text string) int {
	t.Helper()
	want := interestingLines(textCommandsAll([]byte(text)))
	if got := interestingLines(textCommands([]byte(text))); !slices.Equal(got, want) {
		t.Errorf("textCommands(%q) keeps\n%s\nsplitting every line gives\n%s", text, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return len(want)
}

// TestTextCommandsGate: the lines textCommands splits are all the lines a
// detector reads — on every program, service variable and flag in code,
// quoted, split by quotes, in another case, continued over lines, after
// a path, with the letters whose lower case is ASCII, and on the check's
// testdata and the fixtures.
func TestTextCommandsGate(t *testing.T) {
	filler := "def forward(self, x):\n    return self.linear(x)  # scaled array\n"
	words := []string{"-m", "--donate-level=1", "JUPYTER_TOKEN=x"}
	for p := range programs {
		words = append(words, p)
	}
	for k := range serviceEnv {
		words = append(words, k+"=0.0.0.0")
	}
	found := 0
	for _, w := range words {
		half := len(w) / 2
		for _, line := range []string{
			w, w + " --port 80", "  cmd: [" + w + ", '--ip', \"0.0.0.0\"]", "/usr/local/bin/" + w + " serve",
			strings.ToUpper(w) + " x", `"` + w[:half] + `"` + w[half:] + " x", w[:half] + "'" + w[half:] + "' x",
			"run " + w[:half] + "\\\n" + w[half:] + " x", "x \\\n  " + w + " \\\n  --flag", "python -m " + w,
			"\u212a" + w, "ſ" + w, strings.Replace(w, "k", "\u212a", 1) + " x", strings.Replace(w, "i", "İ", 1) + " y",
		} {
			found += compareTextCommands(t, filler+line+"\n"+filler)
			found += compareTextCommands(t, line)
		}
	}
	for _, dir := range []string{"testdata", "../../fixtures"} {
		filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			if b, err := os.ReadFile(p); err == nil && len(b) < 1<<20 {
				found += compareTextCommands(t, string(b))
			}
			return nil
		})
	}
	if found < len(words)*10 {
		t.Errorf("only %d interesting lines compared: the gate is not exercised", found)
	}
	t.Logf("%d interesting lines compared", found)
}

func FuzzTextCommandsGate(f *testing.F) {
	f.Add("python -m http.server\nxmrig --donate-level 1\n")
	f.Add("jupyter lab --ip=0.0.0.0 \\\n --port 8888\n")
	f.Add("x = ['ju'pyter, \"la\"b]\n\u212aubectl run\n")
	f.Fuzz(func(t *testing.T, text string) {
		compareTextCommands(t, text)
	})
}
