package config

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's flag tables from the settings table")

// TestREADMEFlagTable: the README's flag tables are generated from the
// settings table; run `go test ./scanners/config -run README -update` after
// changing a setting.
func TestREADMEFlagTable(t *testing.T) {
	const path = "../../README.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)(<!-- settings: ([a-z ]+) -->\n)(.*?)(<!-- /settings -->)`)
	found := 0
	out := re.ReplaceAllStringFunc(string(data), func(m string) string {
		found++
		g := re.FindStringSubmatch(m)
		want := Markdown(g[2])
		if g[3] != want && !*update {
			t.Errorf("README.md: the %s flag table is not the settings table's; run go test ./scanners/config -run README -update\ngot:\n%s\nwant:\n%s", g[2], g[3], want)
		}
		return g[1] + want + g[4]
	})
	if found == 0 {
		t.Fatal("README.md has no <!-- settings: COMMAND --> tables")
	}
	if *update && out != string(data) {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Count(out, "<!-- settings: ") != found {
		t.Error("an unterminated settings table in README.md")
	}
}
