package secrets

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMLCode: the hand-written ML-style tree of fixtures/secrets/mlcode,
// which mirrors where gitleaks' generic rule fires on ML code (10 findings
// by gitleaks 8.30.1 and by mlwarden before issue 16), gives no finding.
func TestMLCode(t *testing.T) {
	s := newScanner(t)
	root := filepath.Join("..", "..", "fixtures", "secrets", "mlcode")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		n++
		for _, f := range unsuppressed(scan(t, s, filepath.ToSlash(rel), string(data))) {
			t.Errorf("%s:%d: %s (%s)", f.Path, f.Line, f.RuleID, f.Evidence)
		}
		return nil
	})
	if err != nil || n < 10 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}

// TestWriteRuleCases writes the positive and negative cases of every rule
// test (ruleCases, TestCodeContext's, TestEncodingsAndContexts') on five
// seeds into $MLWARDEN_SECRETS_CASES_DIR/{pos,neg}/, for
// bench/secrets-peers.sh to run gitleaks and mlwarden over them. Only
// with the variable set.
func TestWriteRuleCases(t *testing.T) {
	dir := os.Getenv("MLWARDEN_SECRETS_CASES_DIR")
	if dir == "" {
		t.Skip("set MLWARDEN_SECRETS_CASES_DIR to write the cases")
	}
	write := func(kind, rule, path string, i int, content string) {
		p := filepath.Join(dir, kind, strings.TrimPrefix(rule, "secrets/"), fmt.Sprint(i), path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for ci, tc := range ruleCases {
		for seed := uint64(1); seed <= 5; seed++ {
			g := newFake(uint64(ci)*100 + seed)
			content, _ := tc.pos(g)
			write("pos", tc.rule, tc.path, i, content)
			write("neg", tc.rule, tc.path, i, tc.neg(g))
			i++
		}
	}
}
