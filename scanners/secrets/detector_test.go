//go:build !mlwarden_sbatch

package secrets

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"

	"github.com/mlwarden/mlwarden/scanners/secrets/internal/detector"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// detectorPair is gitleaks' detector and package detector's (the sbatch
// hook's) over cfg, set up alike.
type detectorPair struct {
	ref  *detect.Detector
	lite *detector.Detector
}

func newDetectorPair(cfg config.Config, depth int, allow bool) detectorPair {
	p := detectorPair{detect.NewDetector(cfg), detector.NewDetector(cfg)}
	p.ref.MaxDecodeDepth, p.lite.MaxDecodeDepth = depth, depth
	p.ref.IgnoreGitleaksAllow, p.lite.IgnoreGitleaksAllow = allow, allow
	return p
}

// keysOf lists every exported field of each finding (gitleaks' or
// package detector's) but the fragment, sorted (gitleaks runs rules in map
// order). Field names are part of the text, so that a field one type has
// and the other lacks shows as a difference.
func keysOf[F any](fs []F) []string {
	var out []string
	for _, f := range fs {
		v := reflect.ValueOf(f)
		var b strings.Builder
		for i := range v.NumField() {
			if fd := v.Type().Field(i); fd.IsExported() && fd.Name != "Fragment" {
				fmt.Fprintf(&b, "%s=%q ", fd.Name, fmt.Sprint(v.Field(i).Interface()))
			}
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}

// TestDetectorFinding: package detector's Finding and Fragment have
// gitleaks' fields, by name and type.
func TestDetectorFinding(t *testing.T) {
	fields := func(v any) []string {
		rt := reflect.TypeOf(v)
		var out []string
		for i := range rt.NumField() {
			if f := rt.Field(i); f.IsExported() {
				typ := f.Type.String()
				if f.Name == "Fragment" || f.Name == "CommitInfo" {
					typ = f.Type.Kind().String() // a pointer to the package's own type
				}
				out = append(out, f.Name+" "+typ+" "+string(f.Tag))
			}
		}
		return out
	}
	//lint:ignore SA1019 gitleaks v8's detector takes a detect.Fragment.
	for _, c := range [][2]any{{report.Finding{}, detector.Finding{}}, {detect.Fragment{}, detector.Fragment{}}} {
		if a, b := fields(c[0]), fields(c[1]); !slices.Equal(a, b) {
			t.Errorf("%T has\n%s\n%T has\n%s", c[0], strings.Join(a, "\n"), c[1], strings.Join(b, "\n"))
		}
	}
}

// compare runs both on one fragment and reports a difference; it returns
// how many findings gitleaks made.
func (p detectorPair) compare(t *testing.T, f detector.Fragment) int {
	t.Helper()
	//lint:ignore SA1019 gitleaks v8's detector takes a detect.Fragment.
	ref := detect.Fragment{Raw: f.Raw, FilePath: f.FilePath, WindowsFilePath: f.WindowsFilePath, SymlinkFile: f.SymlinkFile, CommitSHA: f.CommitSHA, StartLine: f.StartLine}
	want := keysOf(p.ref.DetectContext(context.Background(), ref))
	got := keysOf(p.lite.DetectContext(context.Background(), f))
	if !slices.Equal(got, want) {
		t.Errorf("%s %.80q: package detector found\n%s\ngitleaks finds\n%s", f.FilePath, f.Raw, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return len(want)
}

// detectorInputs is every rule case as found (positive, negative, upper
// case, inside code, twice on a line) and encoded as the decoding passes
// read it, and the fixtures.
func detectorInputs(t *testing.T) []detector.Fragment {
	t.Helper()
	g := newFake(61)
	filler := codeFiller(g, 40)
	var out []detector.Fragment
	add := func(path, raw string) { out = append(out, detector.Fragment{Raw: raw, FilePath: path, StartLine: 1}) }
	for ci, c := range ruleCases {
		g := newFake(uint64(ci)*7 + 1)
		pos, _ := c.pos(g)
		for _, body := range []string{pos, c.neg(g), strings.ToUpper(pos), filler + pos + "\n" + filler, "MY_" + pos + " " + pos} {
			add(c.path, body)
		}
		add(c.path, "x = \""+base64.StdEncoding.EncodeToString([]byte(pos))+"\"\n")
		add(c.path, "x = "+hex.EncodeToString([]byte(pos))+"\n")
		add(c.path, "u = "+url.QueryEscape(pos)+"\n")
		add(c.path, pos+" # gitleaks:allow\n")
		add(strings.ReplaceAll(c.path, "/", `\`), pos)
	}
	key := "api_key = \"" + g.str(alnum, 32) + "\"\n"
	for _, raw := range []string{"\u212aEY_" + key, "ſecret_" + key, "İ " + key, key + key + key, "", "\n\n", "no newline " + key[:len(key)-1]} {
		add("k.py", raw)
	}
	// Paths gitleaks' allowlists and path rules judge.
	for _, p := range []string{"node_modules/x/a.js", "go.sum", "vendor/a/b.go", "a/.git/config", "id_rsa.pub", "keys/server.p12", "x.pkcs12", "Gemfile.lock"} {
		add(p, key)
	}
	filepath.WalkDir("../../fixtures", func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<20 {
			add(p, string(b))
		}
		return nil
	})
	return out
}

// TestDetectorSame: package detector (the sbatch hook's engine) finds,
// field for field, what gitleaks' detector finds with the check's rules —
// plain and with the decoding passes, with gitleaks:allow honoured and
// kept — on every rule case in many forms and on the fixtures.
func TestDetectorSame(t *testing.T) {
	s := newScanner(t)
	inputs := detectorInputs(t)
	for _, setup := range []struct {
		depth int
		allow bool
	}{{0, false}, {decodeDepth, true}} {
		p := newDetectorPair(s.rs.cfg, setup.depth, setup.allow)
		found := 0
		for _, f := range inputs {
			found += p.compare(t, f)
		}
		if found < len(ruleCases)*3 {
			t.Errorf("depth %d: only %d findings over %d rule cases: the comparison is not exercised", setup.depth, found, len(ruleCases))
		}
		t.Logf("depth %d, gitleaks:allow kept %v: %d findings compared", setup.depth, setup.allow, found)
	}
}

// TestDetectorSameConfigs: the same on configs the built-in rules do not
// exercise: composite rules (required rules within lines and columns),
// path-only rules, allowlists with AND over commits, paths, regexes and
// stop words aimed at the match and the line, a rule without keywords, and
// the config file's own path.
func TestDetectorSameConfigs(t *testing.T) {
	cfg, inputs := configCases(t)
	for _, depth := range []int{0, 3} {
		p := newDetectorPair(cfg, depth, false)
		found := 0
		for _, f := range inputs {
			found += p.compare(t, f)
		}
		if found < 8 {
			t.Errorf("depth %d: only %d findings: the comparison is not exercised", depth, found)
		}
	}
}

// TestPrefixedSameConfigs: the check's plain detector finds what gitleaks'
// finds on the configs of TestDetectorSameConfigs — among them a composite
// rule that requires a rule the plain detector could run itself (it must
// not: the composite looks its required rules up in gitleaks' config), and
// a global allowlist of paths, regexes and stop words over a rule gitleaks
// runs for it (whose copy of the allowlists has no paths: contentAllowlists).
func TestPrefixedSameConfigs(t *testing.T) {
	cfg, inputs := configCases(t)
	fast, ref := newPrefixedDetector(cfg), keepAllowed(engine.NewDetector(cfg))
	if _, ok := fast.(*prefixedDetector); !ok {
		t.Fatalf("the plain detector is %T, not the prefixed one", fast)
	}
	found := 0
	for _, f := range inputs {
		found += comparePrefixed(t, fast, ref, f.FilePath, f.Raw)
	}
	if found < 8 {
		t.Errorf("only %d findings: the comparison is not exercised", found)
	}
}

// configCases returns the config of TestDetectorSameConfigs and its
// inputs.
func configCases(t *testing.T) (config.Config, []detector.Fragment) {
	t.Helper()
	g := newFake(62)
	id, key := "AKIA"+strings.ToUpper(g.str(alnum, 16)), g.str(alnum, 40)
	cfg, _, err := parseConfig([]byte(`
title = "test"
[[rules]]
id = "aws-id"
regex = '''\b(AKIA[A-Z0-9]{16})\b'''
keywords = ["akia"]
[[rules]]
id = "aws-secret"
regex = '''secret\s*=\s*"?([A-Za-z0-9/+]{40})'''
keywords = ["secret"]
skipReport = true
[[rules]]
id = "aws-pair"
regex = '''\b(AKIA[A-Z0-9]{16})\b'''
keywords = ["akia"]
[[rules.required]]
id = "aws-secret"
withinLines = 2
[[rules]]
id = "aws-pair-cols"
regex = '''\b(AKIA[A-Z0-9]{16})\b'''
keywords = ["akia"]
[[rules.required]]
id = "aws-secret"
withinLines = 0
withinColumns = 5
[[rules]]
id = "tok"
regex = '''\btok_[a-z0-9]{20}\b'''
keywords = ["tok_"]
[[rules]]
id = "id-pair"
regex = '''key\s*[:=]\s*"?([A-Za-z0-9/+]{40})'''
keywords = ["key"]
[[rules.required]]
id = "aws-id"
withinLines = 2
[[rules]]
id = "pem-file"
path = '''\.pem$'''
[[rules]]
id = "pem-in-keys"
path = '''^keys/'''
regex = '''BEGIN [A-Z ]*KEY'''
[[rules]]
id = "anything-long"
regex = '''[a-z]{12}[0-9]{4}'''
entropy = 3.0
[[rules.allowlists]]
condition = "AND"
regexTarget = "line"
regexes = ['''EXAMPLE''']
paths = ['''docs/''']
[[rules.allowlists]]
regexTarget = "match"
regexes = ['''^zzz''']
stopwords = ["qqqq"]
[[allowlists]]
condition = "AND"
commits = ["abc123"]
paths = ['''^legacy/''']
[[allowlists]]
paths = ['''\.lock$''']
[[allowlists]]
paths = ['''^vendor/''']
regexes = ['''^fakefake''']
stopwords = ["sample"]
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Path = "cfg/.gitleaks.toml"
	inputs := []detector.Fragment{
		{Raw: "id = " + id + "\nsecret = \"" + key + "\"\n", FilePath: "a.env"},
		{Raw: "id = " + id + "\n\n\n\nsecret = \"" + key + "\"\n", FilePath: "a.env"},
		{Raw: id + " secret=" + key, FilePath: "a.env"},
		{Raw: "     " + id + "\nsecret=" + key, FilePath: "a.env"},
		{Raw: "x", FilePath: "certs/server.pem"},
		{Raw: "x", FilePath: `certs\server.pem`, WindowsFilePath: `certs\server.pem`},
		{Raw: "-----BEGIN RSA PRIVATE KEY-----", FilePath: "keys/a.txt"},
		{Raw: "-----BEGIN RSA PRIVATE KEY-----", FilePath: "other/a.txt"},
		{Raw: "abcdefghijkl1234 EXAMPLE", FilePath: "docs/a.md"},
		{Raw: "abcdefghijkl1234 EXAMPLE", FilePath: "src/a.md"},
		{Raw: "zzzdefghijkl1234 qwertyuiopas9876 xqqqqyuiopas9876", FilePath: "src/a.md"},
		{Raw: "aaaaaaaaaaaa1111", FilePath: "src/low.md"},
		{Raw: "id = " + id, FilePath: "legacy/a.env", CommitSHA: "abc123"},
		{Raw: "id = " + id, FilePath: "legacy/a.env", CommitSHA: "def456"},
		{Raw: "id = " + id, FilePath: "Gemfile.lock"},
		{Raw: "fakefakeabcd1234 samplexyzabc9999 realrealabcd5678", FilePath: "src/x.md"},
		{Raw: "fakefakeabcd1234 samplexyzabc9999 realrealabcd5678", FilePath: "vendor/x.md"},
		{Raw: "id = " + id, FilePath: "cfg/.gitleaks.toml"},
		{Raw: "id = " + base64.StdEncoding.EncodeToString([]byte(id+" secret="+key)), FilePath: "a.env"},
		{Raw: "id = " + id + "\napi_key: " + key + "\nt = tok_" + strings.ToLower(g.str(alnum, 20)) + "\n", FilePath: "b.env"},
		{Raw: "id = " + id + "\n\n\napi_key: " + key + "\n", FilePath: "b.env"},
	}
	for i := range inputs {
		inputs[i].StartLine = 3
	}
	return cfg, inputs
}

// FuzzDetectorSame compares package detector with gitleaks' detector, the
// check's rules and decoding passes, on what the fuzzer makes of the rule
// cases.
func FuzzDetectorSame(f *testing.F) {
	g := newFake(63)
	for ci, c := range ruleCases {
		if ci%4 == 0 {
			pos, _ := c.pos(g)
			f.Add(c.path, pos)
		}
	}
	f.Add("a.env", "x = \""+base64.StdEncoding.EncodeToString([]byte("HF_TOKEN=hf_"+g.str(alnum, 34)))+"\"")
	s := newScanner(f)
	p := newDetectorPair(s.rs.cfg, decodeDepth, true)
	f.Fuzz(func(t *testing.T, path, raw string) {
		if len(raw) > 1<<14 {
			return
		}
		p.compare(t, detector.Fragment{Raw: raw, FilePath: path, StartLine: 1})
	})
}
