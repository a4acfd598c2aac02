package pins

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestRules(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range New().Rules() {
		if seen[r.ID] {
			t.Errorf("duplicate rule %s", r.ID)
		}
		seen[r.ID] = true
		if !strings.HasPrefix(r.ID, "pins/") || r.Check != scanners.CheckPins || r.Title == "" || r.Why == "" || r.Fix == "" {
			t.Errorf("incomplete rule %+v", r)
		}
	}
	// Every rule variable used in the sources is listed.
	used := regexp.MustCompile(`\brule[A-Z]\w+\b`)
	entries, _ := os.ReadDir(".")
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, _ := os.ReadFile(e.Name())
		for _, v := range used.FindAllString(string(src), -1) {
			if !strings.Contains(rulesSrc(t), v+" = rule(") {
				t.Errorf("%s uses %s, which is not defined in rules.go", e.Name(), v)
			}
		}
	}
	if got, want := len(seen), strings.Count(rulesSrc(t), " = rule("); got != want {
		t.Errorf("Rules() lists %d rules, rules.go defines %d", got, want)
	}
}

func rulesSrc(t *testing.T) string {
	b, err := os.ReadFile("rules.go")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
