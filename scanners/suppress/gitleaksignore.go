package suppress

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// GitleaksIgnoreFile is the file gitleaks reads fingerprints to ignore from,
// at the root of the scanned directory or repository.
const GitleaksIgnoreFile = ".gitleaksignore"

// GitleaksIgnore is the set of finding fingerprints a .gitleaksignore lists,
// so that a repository moving from gitleaks keeps its reviewed exceptions.
type GitleaksIgnore map[string]bool

// ParseGitleaksIgnore reads a .gitleaksignore: one gitleaks fingerprint per
// line ("file:rule-id:line", or "commit:file:rule-id:line" for history),
// blank lines and '#' comments skipped.
func ParseGitleaksIgnore(data []byte) GitleaksIgnore {
	ig := GitleaksIgnore{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		// gitleaks normalizes Windows separators in the file part.
		if parts := strings.Split(l, ":"); len(parts) == 3 || len(parts) == 4 {
			parts[len(parts)-3] = strings.ReplaceAll(parts[len(parts)-3], "\\", "/")
			l = strings.Join(parts, ":")
		}
		ig[l] = true
	}
	return ig
}

// Apply marks as suppressed the unsuppressed secrets findings of target
// that ig lists, matching them as gitleaks fingerprints them. gitleaksID
// maps mlwarden's rule ID back to gitleaks' (see Scanner.GitleaksRuleID).
// It returns how many it suppressed.
func (ig GitleaksIgnore) Apply(res *scanners.Result, target string, gitleaksID func(string) (string, bool)) int {
	n := 0
	for i := range res.Findings {
		f := &res.Findings[i]
		if f.Target != target || f.Check != scanners.CheckSecrets || f.Suppressed != "" {
			continue
		}
		id, ok := gitleaksID(f.RuleID)
		if !ok {
			continue
		}
		tail := ":" + id + ":" + strconv.Itoa(f.Line)
		// gitleaks names files as it walked them: relative to the
		// repository, or under the path it was given ("./x", "dir/x").
		// Like gitleaks, an entry without a commit matches in every commit.
		for _, p := range []string{f.Path, "./" + f.Path, strings.TrimSuffix(target, "/") + "/" + f.Path} {
			if ig[p+tail] || f.Commit != "" && ig[f.Commit+":"+p+tail] {
				f.Suppressed = "listed in " + GitleaksIgnoreFile
				n++
				break
			}
		}
	}
	return n
}
