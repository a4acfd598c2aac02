package reports_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

// chromium finds Debian's chromium: a skip outside CI, a failure under
// CI=true, where it must be installed.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install chromium); CI must run the HTML report test")
	}
	t.Skip("chromium is not installed (apt-get install chromium): the HTML report is not rendered")
	return ""
}

// dumpDOM renders page in headless Chromium, its script run, and returns
// the DOM.
func dumpDOM(t *testing.T, bin, page, hash string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-extensions", "--no-first-run", "--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page+hash)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return string(out)
}

// TestHTMLInChromium renders the report in a real browser and reads the
// DOM its script leaves: the filters, given in the address, show what they
// should, the chart has the summary's counts, and the page loads nothing.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	page := filepath.Join(t.TempDir(), "report.html")
	res := sampleBOM()
	res.Findings[0].Message += ` <script>document.title="owned"</script><img src=x onerror=alert(1)>`
	if err := os.WriteFile(page, render(t, "html", res, failOnHigh()), 0o644); err != nil {
		t.Fatal(err)
	}
	shown := regexp.MustCompile(`id="shown-count">(\d+)<`)
	for _, tc := range []struct{ hash, want string }{
		{"", "5"}, // six findings, one suppressed
		{"#severity=critical", "2"},
		{"#check=models", "2"},
		{"#suppressed=1", "6"},
		{"#text=train.py", "2"},
		{"#severity=low", "0"},
	} {
		dom := dumpDOM(t, bin, page, tc.hash)
		m := shown.FindStringSubmatch(dom)
		if m == nil || m[1] != tc.want {
			t.Errorf("%q: shown %v, want %s", tc.hash, m, tc.want)
		}
		if tc.hash != "" {
			continue
		}
		if n := strings.Count(dom, `class="finding`); n != 6 {
			t.Errorf("%d findings in the page, want 6", n)
		}
		for sev, n := range map[string]string{"critical": "2", "high": "2", "info": "1", "suppressed": "1"} {
			if !strings.Contains(dom, `data-severity="`+sev+`" data-count="`+n+`"`) {
				t.Errorf("chart: no %s bar of %s", sev, n)
			}
		}
		if strings.Contains(dom, "<title>owned") || strings.Contains(dom, "<img src=") || !strings.Contains(dom, "&lt;script&gt;") {
			t.Error("scanned content reached the page unescaped")
		}
		if !strings.Contains(dom, "fails the run") || !strings.Contains(dom, "Fix:") || !strings.Contains(dom, "train.py:9") {
			t.Error("a finding lacks its location, fix or fail mark")
		}
	}
}

// TestHTMLFetchesNothing: no element of the page names anything to load,
// and the policy forbids it.
func TestHTMLFetchesNothing(t *testing.T) {
	page := string(render(t, "html", sampleBOM(), failOnHigh()))
	if regexp.MustCompile(`(?i)<(link|img|iframe|object|embed)\b|\b(src|href)\s*=`).MatchString(page) {
		t.Error("the page refers to something to load")
	}
	if !strings.Contains(page, `content="default-src 'none';`) {
		t.Error("no Content-Security-Policy")
	}
	empty := string(render(t, "html", &scanners.Result{Version: scanners.ReportVersion}, fixedOptions))
	if !strings.Contains(empty, "No findings.") {
		t.Error("a clean run's page does not say so")
	}
}

// TestHTMLOrderAndCards: the page opens with the most severe findings first
// (within a severity by target, path and line), whatever the report's
// order; "sort by path" (in the page, or #sort=path) reorders the cards;
// and the findings of one rule on one line are one card listing each, the
// shown count still counting findings.
func TestHTMLOrderAndCards(t *testing.T) {
	res := &scanners.Result{Version: scanners.ReportVersion, Targets: []scanners.Target{{Name: "proj", Kind: scanners.KindDir}}}
	add := func(rule string, sev scanners.Severity, path string, line int, msg string) {
		res.Findings = append(res.Findings, scanners.Finding{RuleID: rule, Check: strings.Split(rule, "/")[0], Severity: sev, Target: "proj", Path: path, Line: line, Message: msg, Evidence: msg})
	}
	// In the report's order: by path.
	add("pins/pip-unpinned", scanners.SeverityMedium, "a/setup.sh", 3, "numpy is not pinned")
	add("pins/pip-unpinned", scanners.SeverityMedium, "a/setup.sh", 3, "pandas is not pinned")
	add("pins/pip-unpinned", scanners.SeverityMedium, "a/setup.sh", 3, "torch is not pinned")
	add("pins/pip-unpinned", scanners.SeverityMedium, "a/setup.sh", 4, "scipy is not pinned")
	add("misconfig/notebook-exposed", scanners.SeverityCritical, "b/run.sh", 7, "jupyter on 0.0.0.0")
	add("secrets/github-pat", scanners.SeverityCritical, "a/train.py", 2, "a token")
	add("models/torch-load-unsafe", scanners.SeverityHigh, "c/train.py", 1, "torch.load")
	res.Summary = scanners.Summarize(res.Findings)
	html := string(render(t, "html", res, fixedOptions))

	card := regexp.MustCompile(`(?s)<div class="finding[^"]*" data-severity="(\w+)"[^>]*data-count="(\d+)"[^>]*>.*?<div class="loc">proj: ([^<]+)</div>`)
	order := func(page string) []string {
		var out []string
		for _, m := range card.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1]+" "+m[3]+" ×"+m[2])
		}
		return out
	}
	wantSev := []string{"critical a/train.py:2 ×1", "critical b/run.sh:7 ×1", "high c/train.py:1 ×1", "medium a/setup.sh:3 ×3", "medium a/setup.sh:4 ×1"}
	wantPath := []string{"medium a/setup.sh:3 ×3", "medium a/setup.sh:4 ×1", "critical a/train.py:2 ×1", "critical b/run.sh:7 ×1", "high c/train.py:1 ×1"}
	if got := order(html); !slices.Equal(got, wantSev) {
		t.Errorf("cards as written:\n%q\nwant\n%q", got, wantSev)
	}
	for _, pkg := range []string{"numpy", "pandas", "torch"} {
		if !strings.Contains(html, "<li><span class=\"why\">"+pkg+" is not pinned</span>") {
			t.Errorf("the card of a/setup.sh:3 does not list %s", pkg)
		}
	}
	if !strings.Contains(html, `<span class="rule">3 findings</span>`) {
		t.Error("the grouped card does not say how many it holds")
	}

	bin := chromium(t)
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	shown := regexp.MustCompile(`id="shown-count">(\d+)<`)
	for _, tc := range []struct {
		hash  string
		want  []string
		shown string
	}{
		{"", wantSev, "7"},
		{"#sort=path", wantPath, "7"},
		{"#sort=path&severity=medium", wantPath, "4"},
	} {
		dom := dumpDOM(t, bin, page, tc.hash)
		if got := order(dom); !slices.Equal(got, tc.want) {
			t.Errorf("%q: cards in the browser:\n%q\nwant\n%q", tc.hash, got, tc.want)
		}
		if m := shown.FindStringSubmatch(dom); m == nil || m[1] != tc.shown {
			t.Errorf("%q: shown %v, want %s", tc.hash, m, tc.shown)
		}
	}
}
