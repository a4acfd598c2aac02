package scanners_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// lineExpander treats a file starting with "ARCHIVE\n" as an archive whose
// lines name members ("name=content"); "LIMIT" ends it at a limit.
type lineExpander struct{}

func (lineExpander) Expands(a *scanners.Artifact, head []byte) bool {
	return strings.HasPrefix(string(head), "ARCHIVE\n")
}

func (lineExpander) Expand(ctx context.Context, a *scanners.Artifact, c scanners.Content, sink scanners.Sink) ([]scanners.Finding, error) {
	data, _, _ := scanners.ReadAll(c, 0)
	for _, l := range strings.Split(strings.TrimPrefix(string(data), "ARCHIVE\n"), "\n") {
		if l == "LIMIT" {
			f := scanners.At(a, scanners.Rule{ID: "secrets/archive-not-scanned", Check: scanners.CheckSecrets, Severity: scanners.SeverityLow}, 0, "Not scanned: limit")
			return []scanners.Finding{f}, fmt.Errorf("%w: limit", scanners.ErrIncomplete)
		}
		name, body, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		m := *a
		m.Path, m.Container, m.Size, m.FS = a.Path+"!"+name, a.Path, int64(len(body)), nil
		if err := sink.Artifact(&m, strings.NewReader(body)); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// archiveReader is a check that reads archives itself.
type archiveReader struct{ wordScanner }

func (archiveReader) ReadsArchives() bool { return true }

// TestExpander: members of an archive reach the checks that do not read
// archives themselves, their findings are located at the member, and what
// the expander could not scan is a finding and an error.
func TestExpander(t *testing.T) {
	for _, stream := range []bool{false, true} {
		src := newSource(stream, map[string][]byte{
			"dist/app.zip": []byte("ARCHIVE\nconf/a.env=x needle\nb.txt=hay\n"),
			"big.zip":      []byte("ARCHIVE\nc.txt=needle\nLIMIT\nd.txt=needle\n"),
		})
		text := wordScanner{check: "secrets", word: "needle"}
		models := archiveReader{wordScanner{check: "models", word: "needle"}}
		res := scanners.NewDispatcher([]scanners.Scanner{text, models}, scanners.WithExpander(lineExpander{})).Run(context.Background(), src)
		var got []string
		for _, f := range res.Findings {
			if strings.Contains(f.Path, "!") || f.RuleID == "secrets/archive-not-scanned" {
				got = append(got, f.RuleID+"@"+f.Path) // the archives themselves are text here: found too
			}
		}
		want := "secrets/archive-not-scanned@big.zip,secrets/word@big.zip!c.txt,secrets/word@dist/app.zip!conf/a.env"
		if strings.Join(got, ",") != want {
			t.Errorf("stream %v: findings %v, want %s", stream, got, want)
		}
		if len(res.Errors) != 1 || res.Errors[0].Path != "big.zip" || !strings.Contains(res.Errors[0].Message, "not scanned in full") {
			t.Errorf("stream %v: errors %+v", stream, res.Errors)
		}
	}
	// Without the option, archives are files like any other.
	src := newSource(false, map[string][]byte{"a.zip": []byte("ARCHIVE\nx=needle\n")})
	res := scanners.NewDispatcher([]scanners.Scanner{wordScanner{check: "secrets", word: "needle"}}).Run(context.Background(), src)
	if len(res.Findings) != 1 || res.Findings[0].Path != "a.zip" {
		t.Errorf("without an expander: %+v", res.Findings)
	}
}
