package scannertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

// MaxWantsCost bounds one Wants (and Rides) call on a full head of
// scanners.HeadSize bytes. The dispatcher asks every check about every
// file of a target, the hundreds of thousands of an image or a dataset
// included, so a check must decide from the path and a glance at the head.
// The test times the fastest of a few rounds, so a loaded machine does not
// fail it; the race detector's slowdown is allowed for.
const MaxWantsCost = 50 * time.Microsecond

// checkNames are the scanners.Check constants.
var checkNames = []string{
	scanners.CheckSecrets, scanners.CheckPins, scanners.CheckModels,
	scanners.CheckSignatures, scanners.CheckCUDA, scanners.CheckMisconfig, scanners.CheckVulns, scanners.CheckNode,
}

// ruleName is the NAME of a CHECK/NAME rule ID: lowercase kebab case.
var ruleName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Conformance tests what every check promises the dispatcher and the
// report, whatever it checks: one subtest for each of CheckRules,
// CheckWants, CheckWantsCost, CheckEmptyTarget and CheckSeeds. Pass as
// seeds the check's fuzz seed corpora (FuzzFiles, FuzzInputs) and fixtures
// (DirSeeds).
//
// A check that fails one of them for a reason that takes more than a test
// to fix calls the others itself, and says in a comment why and what is
// left out.
func Conformance(t *testing.T, sc scanners.Scanner, seeds ...Seed) {
	t.Helper()
	t.Run("rules", func(t *testing.T) { CheckRules(t, sc) })
	t.Run("wants", func(t *testing.T) { CheckWants(t, sc, seeds...) })
	t.Run("wants-cost", func(t *testing.T) { CheckWantsCost(t, sc, seeds...) })
	t.Run("empty-target", func(t *testing.T) { CheckEmptyTarget(t, sc) })
	t.Run("seeds", func(t *testing.T) { CheckSeeds(t, sc, seeds...) })
	if _, ok := sc.(scanners.PrefixReader); ok {
		t.Run("prefix", func(t *testing.T) { CheckPrefix(t, sc, seeds...) })
	}
}

// CheckPrefix tests a PrefixReader: on every seed it wants and declares a
// prefix for, Scan reads nothing past that prefix (or the head, which the
// dispatcher always keeps) and reports what it reports with the whole
// content at hand.
func CheckPrefix(t testing.TB, sc scanners.Scanner, seeds ...Seed) {
	t.Helper()
	report(t, checkPrefix(sc, seeds, t.Logf))
}

// CheckRules tests the check's name and rules: Check is one of the
// scanners.Check constants; every rule ID is CHECK/NAME with CHECK the
// scanner's Check() and NAME lowercase kebab case; IDs are unique; every
// rule has the scanner's check, a valid severity, a Title and a Why.
func CheckRules(t testing.TB, sc scanners.Scanner) {
	t.Helper()
	report(t, checkRules(sc))
}

// CheckWants tests that Wants (and Rides, for a Rider) decide from the
// artifact and the head alone: on each seed they open nothing through
// Artifact.FS, leave the head as it was and answer the same when asked
// twice; and they do not panic on a zero artifact.
func CheckWants(t testing.TB, sc scanners.Scanner, seeds ...Seed) {
	t.Helper()
	report(t, checkWants(sc, seeds))
}

// CheckWantsCost tests that a Wants (and Rides) call takes less than
// MaxWantsCost on a full head: each seed's content repeated to
// scanners.HeadSize bytes, under its own path and under a name that says
// nothing, and text and binary heads under common names.
func CheckWantsCost(t testing.TB, sc scanners.Scanner, seeds ...Seed) {
	t.Helper()
	report(t, checkWantsCost(sc, seeds, maxWantsCost(), t.Logf))
}

// CheckEmptyTarget tests that a target with no file, and a TargetFinisher's
// FinishTarget on targets it never saw, give no error, no panic and only
// well-formed findings.
func CheckEmptyTarget(t testing.TB, sc scanners.Scanner) {
	t.Helper()
	report(t, checkEmptyTarget(sc))
}

// CheckSeeds scans the seeds through the dispatcher. It tests that they
// give no error and no panic, that Wants takes at least one, and that every
// finding names a rule of Rules() and has the scanner's check, a valid
// severity (which may differ from the rule's: checks grade by context), a
// message and a place the target has (a file, or a directory of files).
func CheckSeeds(t testing.TB, sc scanners.Scanner, seeds ...Seed) {
	t.Helper()
	if len(seeds) == 0 {
		t.Fatal("no seeds: pass the check's fuzz seeds and fixtures")
	}
	report(t, checkSeeds(sc, seeds, t.Logf))
}

func report(t testing.TB, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}

// logf is testing.TB's Logf.
type logf func(format string, args ...any)

func maxWantsCost() time.Duration {
	if raceEnabled {
		return 10 * MaxWantsCost
	}
	return MaxWantsCost
}

func checkRules(sc scanners.Scanner) []error {
	var errs []error
	check := sc.Check()
	if !slices.Contains(checkNames, check) {
		errs = append(errs, fmt.Errorf("Check() = %q, not one of the scanners.Check constants %q", check, checkNames))
	}
	rules := sc.Rules()
	if len(rules) == 0 {
		errs = append(errs, fmt.Errorf("Rules() is empty"))
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.ID] {
			errs = append(errs, fmt.Errorf("rule %s: listed twice", r.ID))
		}
		seen[r.ID] = true
		prefix, name, ok := strings.Cut(r.ID, "/")
		if !ok || prefix != check || !ruleName.MatchString(name) {
			errs = append(errs, fmt.Errorf("rule %q: want the form %s/NAME with NAME lowercase kebab case", r.ID, check))
		}
		if r.Check != check {
			errs = append(errs, fmt.Errorf("rule %s: Check is %q, want %q", r.ID, r.Check, check))
		}
		if !validSeverity(r.Severity) {
			errs = append(errs, fmt.Errorf("rule %s: invalid severity %d", r.ID, int(r.Severity)))
		}
		if r.Title == "" {
			errs = append(errs, fmt.Errorf("rule %s: no Title", r.ID))
		}
		if r.Why == "" {
			errs = append(errs, fmt.Errorf("rule %s: no Why", r.ID))
		}
	}
	return errs
}

func validSeverity(s scanners.Severity) bool {
	return s >= scanners.SeverityInfo && s <= scanners.SeverityCritical
}

// tripwireFS fails every Open and remembers the names: Wants must not
// read through Artifact.FS.
type tripwireFS struct{ opened []string }

func (f *tripwireFS) Open(name string) (fs.File, error) {
	f.opened = append(f.opened, name)
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
}

// head returns the first bytes of data a Wants call sees, with no capacity
// beyond them.
func head(data []byte) []byte {
	return slices.Clip(data[:min(len(data), scanners.HeadSize)])
}

// probe is one Wants-like method of the scanner.
type probe struct {
	name string
	call func(*scanners.Artifact, []byte) bool
}

func probes(sc scanners.Scanner) []probe {
	ps := []probe{{"Wants", sc.Wants}}
	if r, ok := sc.(scanners.Rider); ok {
		ps = append(ps, probe{"Rides", r.Rides})
	}
	return ps
}

func checkWants(sc scanners.Scanner, seeds []Seed) []error {
	var errs []error
	for _, p := range probes(sc) {
		if err := safely(func() { p.call(&scanners.Artifact{}, nil) }); err != nil {
			errs = append(errs, fmt.Errorf("%s on a zero artifact and no head: %v", p.name, err))
		}
		for _, s := range seeds {
			trip := &tripwireFS{}
			a := seedArtifact(s, "seed", trip)
			h := head(s.Data)
			orig := bytes.Clone(h)
			var first, second bool
			if err := safely(func() { first, second = p.call(a, h), p.call(a, h) }); err != nil {
				errs = append(errs, fmt.Errorf("%s(%s): %v", p.name, s.Path, err))
				continue
			}
			if len(trip.opened) > 0 {
				errs = append(errs, fmt.Errorf("%s(%s) opened %q through Artifact.FS: it must decide from the head alone", p.name, s.Path, trip.opened))
			}
			if !bytes.Equal(h, orig) {
				errs = append(errs, fmt.Errorf("%s(%s) changed the head, which every check shares", p.name, s.Path))
			}
			if first != second {
				errs = append(errs, fmt.Errorf("%s(%s) answered %v, then %v", p.name, s.Path, first, second))
			}
		}
	}
	return errs
}

// costPaths are names every check is asked about, beside the seeds' own.
var costPaths = []string{
	"Dockerfile", "requirements.txt", "pyproject.toml", "job.sbatch", "run.sh", "train.py",
	"k8s/job.yaml", ".github/workflows/ci.yml", "nb.ipynb", "README.md", "config.json",
	"model.safetensors", "pytorch_model.bin", "model.pkl", "weights.gguf", "data/0001.jpg",
}

// costCase is one Wants call the cost test times.
type costCase struct {
	path string
	head []byte
}

// costCases pairs every cost path with two text heads and a binary one, and
// every seed with its own path and with a name that says nothing, each
// head a full scanners.HeadSize bytes (a seed's data repeated to fill it).
func costCases(seeds []Seed) []costCase {
	shell := bytes.Repeat([]byte("export PATH=/usr/local/bin:$PATH # a line of shell, yaml or python\n"), scanners.HeadSize)
	prose := bytes.Repeat([]byte("This directory holds the training code, its notes and LICENSE.\n"), scanners.HeadSize)
	bin := make([]byte, scanners.HeadSize)
	x := uint32(2463534242)
	for i := range bin { // xorshift: the same noise every run
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		bin[i] = byte(x)
	}
	var cs []costCase
	for _, p := range costPaths {
		cs = append(cs, costCase{p, head(shell)}, costCase{p, head(prose)}, costCase{p, bin})
	}
	for _, s := range seeds {
		if len(s.Data) == 0 {
			continue
		}
		h := head(bytes.Repeat(s.Data, scanners.HeadSize/len(s.Data)+1))
		cs = append(cs, costCase{s.Path, h}, costCase{"data", h})
	}
	return cs
}

func checkWantsCost(sc scanners.Scanner, seeds []Seed, limit time.Duration, log logf) []error {
	const rounds, calls = 10, 10
	cases := costCases(seeds)
	var errs []error
	for _, p := range probes(sc) {
		var worst time.Duration
		var worstCase costCase
		for _, c := range cases {
			a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", TargetKind: scanners.KindDir, Path: c.path, Size: 1 << 20, Mode: 0o644}
			best := time.Duration(math.MaxInt64)
			// A case over the limit is timed again after short pauses
			// before it fails: a busy machine slows some rounds, not all.
			for try := 0; try < 4 && best > limit; try++ {
				if try > 0 {
					time.Sleep(5 * time.Millisecond)
				}
				for range rounds {
					start := time.Now()
					for range calls {
						p.call(a, c.head)
					}
					best = min(best, time.Since(start)/calls)
				}
			}
			if best > worst {
				worst, worstCase = best, c
			}
			if worst > limit {
				break // one slow case is enough to tell
			}
		}
		if worst > limit {
			errs = append(errs, fmt.Errorf("%s takes %v a call on a %d-byte head of %s (%.40q…), want under %v", p.name, worst, len(worstCase.head), worstCase.path, worstCase.head, limit))
			continue
		}
		log("%s: at most %v a call, on a head of %s (%.40q…)", p.name, worst, worstCase.path, worstCase.head)
	}
	return errs
}

func checkEmptyTarget(sc scanners.Scanner) []error {
	var errs []error
	res := scanners.NewDispatcher([]scanners.Scanner{sc}).Run(context.Background(), Source("empty", fstest.MapFS{}))
	for _, e := range res.Errors {
		errs = append(errs, fmt.Errorf("empty target: %v", e))
	}
	rules := ruleIndex(sc)
	for _, f := range res.Findings {
		errs = append(errs, findingErrors(sc, rules, f, nil)...)
	}
	if fin, ok := sc.(scanners.TargetFinisher); ok {
		for _, tg := range []scanners.Target{{}, {Name: "never-walked", Kind: scanners.KindImage}} {
			var fs []scanners.Finding
			var ferr error
			if err := safely(func() { fs, ferr = fin.FinishTarget(context.Background(), tg) }); err != nil {
				errs = append(errs, fmt.Errorf("FinishTarget(%+v): %v", tg, err))
				continue
			}
			if ferr != nil {
				errs = append(errs, fmt.Errorf("FinishTarget(%+v): %v", tg, ferr))
			}
			for _, f := range fs {
				errs = append(errs, findingErrors(sc, rules, f, nil)...)
			}
		}
	}
	return errs
}

// target is the seeds of one target.
type target struct {
	name  string
	fsys  fstest.MapFS
	seeds map[string]Seed // by path
}

// has reports whether p is a file of the target or a directory holding
// one ("." for its root).
func (tg *target) has(p string) bool {
	if _, ok := tg.seeds[p]; ok {
		return true
	}
	info, err := fs.Stat(tg.fsys, p)
	return err == nil && info.IsDir()
}

// targets groups seeds into targets, in the order they first appear.
func targets(seeds []Seed) ([]*target, []error) {
	var out []*target
	var errs []error
	byName := map[string]*target{}
	for i, s := range seeds {
		name := s.Target
		if name == "" {
			name = fmt.Sprintf("seed-%03d", i)
		}
		tg := byName[name]
		if tg == nil {
			tg = &target{name: name, fsys: fstest.MapFS{}, seeds: map[string]Seed{}}
			byName[name] = tg
			out = append(out, tg)
		}
		if !fs.ValidPath(s.Path) || s.Path == "." {
			errs = append(errs, fmt.Errorf("seed %d: invalid path %q", i, s.Path))
			continue
		}
		if _, dup := tg.seeds[s.Path]; dup {
			errs = append(errs, fmt.Errorf("target %s: two seeds at %s", name, s.Path))
			continue
		}
		tg.seeds[s.Path] = s
		tg.fsys[s.Path] = &fstest.MapFile{Data: s.Data, Mode: 0o644}
	}
	return out, errs
}

func checkSeeds(sc scanners.Scanner, seeds []Seed, log logf) []error {
	tgs, errs := targets(seeds)
	wanted := 0
	var srcs []scanners.Source
	for _, tg := range tgs {
		srcs = append(srcs, Source(tg.name, tg.fsys))
		for _, s := range tg.seeds {
			if sc.Wants(seedArtifact(s, tg.name, tg.fsys), head(s.Data)) {
				wanted++
			}
		}
	}
	if wanted == 0 {
		errs = append(errs, fmt.Errorf("no seed is wanted: Wants takes none of the %d, so they do not exercise Scan", len(seeds)))
	}
	res := scanners.NewDispatcher([]scanners.Scanner{sc}).Run(context.Background(), srcs...)
	byName := map[string]*target{}
	for _, tg := range tgs {
		byName[tg.name] = tg
	}
	for _, e := range res.Errors {
		err := fmt.Errorf("%v", e)
		if tg := byName[e.Target]; tg != nil {
			if s, ok := tg.seeds[e.Path]; ok {
				// Scan again outside the dispatcher, for the panic's stack.
				if perr := safely(func() { scanDirect(sc, seedArtifact(s, tg.name, tg.fsys), s.Data) }); perr != nil {
					err = fmt.Errorf("%v: %v", e, perr)
				}
			}
		}
		errs = append(errs, err)
	}
	rules := ruleIndex(sc)
	for _, f := range res.Findings {
		errs = append(errs, findingErrors(sc, rules, f, byName[f.Target])...)
	}
	log("%d seeds in %d targets, %d wanted: %d findings", len(seeds), len(tgs), wanted, len(res.Findings))
	return errs
}

func checkPrefix(sc scanners.Scanner, seeds []Seed, log logf) []error {
	pr, ok := sc.(scanners.PrefixReader)
	if !ok {
		return nil
	}
	var errs []error
	checked := 0
	for _, seed := range seeds {
		// Each seed as it is and with 16 KiB of zeros after it, so that a
		// prefix shorter than the head the dispatcher keeps is tested too.
		for _, data := range [][]byte{seed.Data, append(slices.Clip(seed.Data), make([]byte, 2*scanners.HeadSize)...)} {
			s := Seed{Target: seed.Target, Path: seed.Path, Data: data}
			a := seedArtifact(s, "prefix", MapFS(map[string][]byte{s.Path: s.Data}))
			h := head(s.Data)
			if !sc.Wants(a, h) {
				continue
			}
			n, ok := pr.Prefix(a, h)
			if !ok {
				continue
			}
			checked++
			keep := min(int64(len(s.Data)), max(n, int64(len(h))))
			size := int64(len(s.Data))
			whole, werr := sc.Scan(context.Background(), a, io.NewSectionReader(bytes.NewReader(s.Data), 0, size))
			part, perr := sc.Scan(context.Background(), a, io.NewSectionReader(scanners.PrefixContent(s.Data[:keep], size), 0, size))
			if fmt.Sprint(werr) != fmt.Sprint(perr) || fmt.Sprint(whole) != fmt.Sprint(part) {
				errs = append(errs, fmt.Errorf("%s (%d bytes): declares a prefix of %d bytes, but reading only that gives %v (error %v), the whole %v (error %v)", s.Path, size, n, part, perr, whole, werr))
			}
		}
	}
	log("%d seeds and padded seeds with a prefix checked", checked)
	return errs
}

func scanDirect(sc scanners.Scanner, a *scanners.Artifact, data []byte) {
	_, _ = sc.Scan(context.Background(), a, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))))
}

func seedArtifact(s Seed, target string, fsys fs.FS) *scanners.Artifact {
	return &scanners.Artifact{
		Kind:       scanners.ArtifactFile,
		Target:     target,
		TargetKind: scanners.KindDir,
		Path:       s.Path,
		Size:       int64(len(s.Data)),
		Mode:       0o644,
		FS:         fsys,
	}
}

func ruleIndex(sc scanners.Scanner) map[string]scanners.Rule {
	m := map[string]scanners.Rule{}
	for _, r := range sc.Rules() {
		m[r.ID] = r
	}
	return m
}

// findingErrors judges one finding; tg, when known, is the target it is
// about.
func findingErrors(sc scanners.Scanner, rules map[string]scanners.Rule, f scanners.Finding, tg *target) []error {
	var errs []error
	at := f.Target + ": " + f.Path
	if _, ok := rules[f.RuleID]; !ok {
		errs = append(errs, fmt.Errorf("%s: finding of rule %q, which Rules() does not list", at, f.RuleID))
	}
	if f.Check != sc.Check() {
		errs = append(errs, fmt.Errorf("%s: %s finding has Check %q, want %q", at, f.RuleID, f.Check, sc.Check()))
	}
	if !validSeverity(f.Severity) {
		errs = append(errs, fmt.Errorf("%s: %s finding has invalid severity %d", at, f.RuleID, int(f.Severity)))
	}
	if f.Message == "" {
		errs = append(errs, fmt.Errorf("%s: %s finding has no message", at, f.RuleID))
	}
	if f.Line < 0 {
		errs = append(errs, fmt.Errorf("%s: %s finding at line %d", at, f.RuleID, f.Line))
	}
	if tg != nil && f.Path != "" && !tg.has(f.Path) {
		errs = append(errs, fmt.Errorf("%s: %s finding at a path the target does not have", at, f.RuleID))
	}
	return errs
}

// safely calls fn and turns a panic into an error that holds the stack.
func safely(fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	fn()
	return nil
}
