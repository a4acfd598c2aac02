package scanners_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// memSource yields in-memory files; stream makes it hand plain readers
// (as an image layer does) instead of io.ReaderAt.
type memSource struct {
	name   string
	files  map[string][]byte
	order  []string
	stream bool
	reads  *atomic.Int64 // bytes read from the content
}

func (m *memSource) Target() scanners.Target {
	return scanners.Target{Name: m.name, Kind: scanners.KindDir}
}

type countingReaderAt struct {
	r     *bytes.Reader
	reads *atomic.Int64
}

func (c *countingReaderAt) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.reads.Add(int64(n))
	return n, err
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.reads.Add(int64(n))
	return n, err
}

func (m *memSource) Walk(ctx context.Context, sink scanners.Sink) error {
	var wg sync.WaitGroup
	for _, p := range m.order {
		wg.Go(func() {
			data := m.files[p]
			a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: m.name, Path: p, Size: int64(len(data))}
			var r io.Reader = &countingReaderAt{r: bytes.NewReader(data), reads: m.reads}
			if m.stream {
				r = io.LimitReader(r, int64(len(data))) // hides ReadAt
			}
			_ = sink.Artifact(a, r)
		})
	}
	wg.Wait()
	return nil
}

// wordScanner reports every line containing its word; text only.
type wordScanner struct {
	check, word string
	panicOn     string
}

func (w wordScanner) Check() string { return w.check }
func (w wordScanner) Rules() []scanners.Rule {
	return []scanners.Rule{{ID: w.check + "/word", Check: w.check, Severity: scanners.SeverityHigh}}
}
func (w wordScanner) Wants(a *scanners.Artifact, head []byte) bool { return !scanners.IsBinary(head) }
func (w wordScanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	if w.panicOn != "" && a.Path == w.panicOn {
		panic("boom")
	}
	data, _, err := scanners.ReadAll(c, 0)
	if err != nil {
		return nil, err
	}
	var out []scanners.Finding
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, w.word) {
			out = append(out, scanners.At(a, w.Rules()[0], i+1, "found "+w.word))
		}
	}
	return out, nil
}

func newSource(stream bool, files map[string][]byte) *memSource {
	m := &memSource{name: "t", files: files, stream: stream, reads: &atomic.Int64{}}
	for p := range files {
		m.order = append(m.order, p)
	}
	return m
}

func TestDispatcherDeterministic(t *testing.T) {
	files := map[string][]byte{}
	for i := range 200 {
		files[fmt.Sprintf("d%d/f%03d.sh", i%7, i)] = []byte(strings.Repeat("x\nneedle here\nhaystack\n", i%5+1))
	}
	scs := []scanners.Scanner{wordScanner{check: "a", word: "needle"}, wordScanner{check: "b", word: "hay"}}
	var first []byte
	for i := range 5 {
		res := scanners.NewDispatcher(scs, scanners.WithWorkers(8)).Run(context.Background(), newSource(i%2 == 0, files))
		got, _ := json.Marshal(res)
		if first == nil {
			first = got
			if res.Summary.High != 200*3*2 {
				t.Fatalf("summary %+v, want %d high", res.Summary, 200*3*2)
			}
			continue
		}
		if !bytes.Equal(first, got) {
			t.Fatalf("run %d differs from run 0", i)
		}
	}
}

func TestDispatcherBinaryNotReadWhole(t *testing.T) {
	big := make([]byte, 50<<20)
	big[10] = 0 // NUL in the head: binary
	for _, stream := range []bool{false, true} {
		src := newSource(stream, map[string][]byte{"weights.bin": big, "a.txt": []byte("needle\n")})
		res := scanners.NewDispatcher([]scanners.Scanner{wordScanner{check: "a", word: "needle"}}).Run(context.Background(), src)
		if len(res.Findings) != 1 {
			t.Fatalf("findings %v", res.Findings)
		}
		// Only the heads (and the small text file) are read, never the 50 MB.
		if n := src.reads.Load(); n > 2*scanners.HeadSize {
			t.Errorf("stream=%v: read %d bytes, want at most %d", stream, n, 2*scanners.HeadSize)
		}
	}
}

func TestDispatcherSpoolsLargeStreams(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefgh\n"), 1<<20) // 9 MiB
	copy(data[len(data)-20:], "needle\n")
	src := newSource(true, map[string][]byte{"big.txt": data})
	res := scanners.NewDispatcher([]scanners.Scanner{wordScanner{check: "a", word: "needle"}}, scanners.WithMemoryLimit(1<<20)).Run(context.Background(), src)
	if len(res.Findings) != 1 || len(res.Errors) != 0 {
		t.Fatalf("findings %v errors %v", res.Findings, res.Errors)
	}
}

func TestDispatcherPanicIsAnError(t *testing.T) {
	src := newSource(false, map[string][]byte{"bad.txt": []byte("needle"), "good.txt": []byte("needle")})
	res := scanners.NewDispatcher([]scanners.Scanner{wordScanner{check: "a", word: "needle", panicOn: "bad.txt"}}).Run(context.Background(), src)
	if len(res.Findings) != 1 || res.Findings[0].Path != "good.txt" {
		t.Errorf("findings %v", res.Findings)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "panic") {
		t.Errorf("errors %v", res.Errors)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"hf_abcdefghijklmnopqrstuvwxyz0123456789": "hf_a…89",
		"short1": "sh…",
		"abc":    "…",
		"":       "…",
	} {
		if got := scanners.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSeverityText(t *testing.T) {
	for _, s := range scanners.Severities() {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back scanners.Severity
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("round trip %v: %v %v", s, back, err)
		}
	}
	if _, err := scanners.ParseSeverity("severe"); err == nil {
		t.Error("ParseSeverity accepted an unknown name")
	}
}

// secretScanner finds one token, as the secrets check would.
type secretScanner struct{}

func (secretScanner) Check() string { return "secrets" }
func (secretScanner) Rules() []scanners.Rule {
	return []scanners.Rule{{ID: "secrets/x", Check: "secrets", Severity: scanners.SeverityCritical}}
}
func (secretScanner) Wants(*scanners.Artifact, []byte) bool { return true }
func (s secretScanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	f := scanners.At(a, s.Rules()[0], 1, "token found")
	f.Secret = "tok_ABCDEFGHIJKLMN"
	f.Evidence = scanners.Redact(f.Secret)
	return []scanners.Finding{f}, nil
}

// leakyScanner reports its word with the whole line as evidence, as a check
// that is not about secrets might.
type leakyScanner struct{ wordScanner }

func (l leakyScanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	fs, err := l.wordScanner.Scan(ctx, a, c)
	for i := range fs {
		fs[i].Evidence = "needle --token tok_ABCDEFGHIJKLMN"
		fs[i].Message = "needle with tok_ABCDEFGHIJKLMN"
	}
	return fs, err
}

func TestSecretsScrubbedFromOtherChecks(t *testing.T) {
	src := newSource(false, map[string][]byte{"x.sh": []byte("needle --token tok_ABCDEFGHIJKLMN\n")})
	res := scanners.NewDispatcher([]scanners.Scanner{secretScanner{}, leakyScanner{wordScanner{check: "a", word: "needle"}}}).Run(context.Background(), src)
	out, _ := json.Marshal(res)
	if len(res.Findings) != 2 || bytes.Contains(out, []byte("tok_ABCDEFGHIJKLMN")) {
		t.Errorf("secret shown: %s", out)
	}
}

// tallyScanner counts the files of each target it scans and reports the
// count once per target when the dispatcher says the target is done.
type tallyScanner struct {
	mu      sync.Mutex
	seen    map[string]int
	panicOn string
}

func (s *tallyScanner) Check() string { return "tally" }
func (s *tallyScanner) Rules() []scanners.Rule {
	return []scanners.Rule{{ID: "tally/count", Check: "tally", Severity: scanners.SeverityInfo}}
}
func (s *tallyScanner) Wants(*scanners.Artifact, []byte) bool { return true }
func (s *tallyScanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	s.mu.Lock()
	s.seen[a.Target]++
	s.mu.Unlock()
	return nil, nil
}
func (s *tallyScanner) FinishTarget(ctx context.Context, t scanners.Target) ([]scanners.Finding, error) {
	if t.Name == s.panicOn {
		panic("boom")
	}
	s.mu.Lock()
	n := s.seen[t.Name]
	s.mu.Unlock()
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: t.Name, Path: "."}
	return []scanners.Finding{scanners.At(a, s.Rules()[0], 0, fmt.Sprintf("%d files", n))}, nil
}

func TestDispatcherFinishTarget(t *testing.T) {
	a := newSource(false, map[string][]byte{"1": []byte("x"), "2": []byte("y"), "3": []byte("z")})
	b := newSource(true, map[string][]byte{"1": []byte("x")})
	b.name = "u"
	c := newSource(false, map[string][]byte{"1": []byte("x")})
	c.name = "v"
	sc := &tallyScanner{seen: map[string]int{}, panicOn: "v"}
	res := scanners.NewDispatcher([]scanners.Scanner{sc}).Run(context.Background(), a, b, c)
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.Target+": "+f.Message)
	}
	if want := []string{"t: 3 files", "u: 1 files"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("findings %q, want %q (each target finished once, after all its files)", got, want)
	}
	if len(res.Errors) != 1 || res.Errors[0].Target != "v" || !strings.Contains(res.Errors[0].Message, "panic") {
		t.Errorf("errors %v, want the panic in target v as an error", res.Errors)
	}
}

// riderScanner records what it is handed; it rides on other checks.
type riderScanner struct {
	mu   sync.Mutex
	seen []string
}

func (r *riderScanner) Check() string                         { return "rider" }
func (r *riderScanner) Rules() []scanners.Rule                { return nil }
func (r *riderScanner) Wants(*scanners.Artifact, []byte) bool { return false }
func (r *riderScanner) Rides(*scanners.Artifact, []byte) bool { return true }
func (r *riderScanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	r.mu.Lock()
	r.seen = append(r.seen, a.Path)
	r.mu.Unlock()
	return nil, nil
}

func TestDispatcherRider(t *testing.T) {
	src := newSource(false, map[string][]byte{"a.txt": []byte("text"), "b.bin": []byte("\x00\x01binary")})
	r := &riderScanner{}
	scanners.NewDispatcher([]scanners.Scanner{wordScanner{check: "w", word: "x"}, r}).Run(context.Background(), src)
	if fmt.Sprint(r.seen) != "[a.txt]" {
		t.Errorf("rider saw %v, want only the file another check wanted", r.seen)
	}
	if n := src.reads.Load(); n > int64(len("text")+len("\x00\x01binary")) {
		t.Errorf("read %d bytes", n)
	}
}

// floodScanner reports n findings of one rule per file (a hostile header
// with one bad entry per tensor).
type floodScanner struct{ n int }

func (f floodScanner) Check() string { return "flood" }
func (f floodScanner) Rules() []scanners.Rule {
	return []scanners.Rule{{ID: "flood/x", Check: "flood", Severity: scanners.SeverityHigh}, {ID: "flood/y", Check: "flood", Severity: scanners.SeverityLow}}
}
func (f floodScanner) Wants(*scanners.Artifact, []byte) bool { return true }
func (f floodScanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	var out []scanners.Finding
	for i := range f.n {
		sev := scanners.SeverityMedium
		if i == f.n-1 {
			sev = scanners.SeverityCritical
		}
		x := scanners.At(a, f.Rules()[0], i+1, fmt.Sprintf("bad entry %d", i))
		x.Severity = sev
		out = append(out, x)
	}
	return append(out, scanners.At(a, f.Rules()[1], 1, "other rule")), nil
}

func TestDispatcherCapsFindingsPerRule(t *testing.T) {
	for _, n := range []int{scanners.MaxFindingsPerRule, 344_000} {
		src := newSource(false, map[string][]byte{"model.safetensors": []byte("x")})
		res := scanners.NewDispatcher([]scanners.Scanner{floodScanner{n: n}}).Run(context.Background(), src)
		want := min(n, scanners.MaxFindingsPerRule) + 1
		if n > scanners.MaxFindingsPerRule {
			want++ // the "and N more" finding
		}
		if len(res.Findings) != want {
			t.Fatalf("n=%d: %d findings, want %d", n, len(res.Findings), want)
		}
		if n <= scanners.MaxFindingsPerRule {
			continue
		}
		var more *scanners.Finding
		for i := range res.Findings {
			if strings.Contains(res.Findings[i].Message, "more flood/x findings") {
				more = &res.Findings[i]
			}
		}
		if more == nil || !strings.Contains(more.Message, fmt.Sprintf("and %d more", n-scanners.MaxFindingsPerRule)) || more.Severity != scanners.SeverityCritical || more.Line != 0 {
			t.Errorf("summary finding %+v", more)
		}
	}
}

// prefixScanner wants *.bin files and reads only their first n bytes
// (PrefixReader); it reports what it could read and where reading stopped.
type prefixScanner struct {
	n     int64
	whole bool // read the whole content instead (a check that misdeclares)
}

func (prefixScanner) Check() string { return "p" }
func (prefixScanner) Rules() []scanners.Rule {
	return []scanners.Rule{{ID: "p/read", Check: "p", Severity: scanners.SeverityLow}}
}
func (prefixScanner) Wants(a *scanners.Artifact, _ []byte) bool {
	return strings.HasSuffix(a.Path, ".bin")
}
func (p prefixScanner) Prefix(*scanners.Artifact, []byte) (int64, bool) { return p.n, true }
func (p prefixScanner) Scan(_ context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	n := p.n
	if p.whole {
		n = c.Size()
	}
	buf := make([]byte, n)
	if _, err := c.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, err
	}
	h := sha256.Sum256(buf)
	return []scanners.Finding{scanners.At(a, p.Rules()[0], 0, fmt.Sprintf("size %d, %x", c.Size(), h[:4]))}, nil
}

// onlyDescriber says *.bin files are models and reads nothing.
type onlyDescriber struct{ describer }

func (onlyDescriber) Wants(*scanners.Artifact, []byte) bool { return false }

// TestDispatcherReadsPrefix: a large streamed artifact whose every check
// reads a prefix is not spooled (the spool directory does not exist), its
// content has its whole size, the prefix reads as the file, a read past it is
// ErrPastPrefix, and its component digest is the whole file's. When another
// check wants it whole, it is spooled and read whole as before.
func TestDispatcherReadsPrefix(t *testing.T) {
	data := make([]byte, 5<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	h := sha256.Sum256(data[:300<<10])
	wantMsg := fmt.Sprintf("size %d, %x", len(data), h[:4])
	whole := sha256.Sum256(data)
	run := func(temp string, scs ...scanners.Scanner) *scanners.Result {
		src := newSource(true, map[string][]byte{"w.bin": data})
		scs = append(scs, onlyDescriber{})
		return scanners.NewDispatcher(scs, scanners.WithMemoryLimit(1<<20), scanners.WithTempDir(temp), scanners.WithComponentHashes(true)).Run(context.Background(), src)
	}
	nowhere := t.TempDir() + "/absent"
	res := run(nowhere, prefixScanner{n: 300 << 10})
	if len(res.Errors) != 0 || len(res.Findings) != 1 || res.Findings[0].Message != wantMsg {
		t.Fatalf("prefix read: findings %+v errors %+v, want %q", res.Findings, res.Errors, wantMsg)
	}
	if len(res.Components) != 1 || res.Components[0].SHA256 != hex.EncodeToString(whole[:]) || res.Components[0].Size != int64(len(data)) {
		t.Errorf("component %+v, want the whole file's digest", res.Components)
	}
	res = run(nowhere, prefixScanner{n: 300 << 10, whole: true})
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "past the prefix") {
		t.Errorf("a read past the prefix: errors %+v, want ErrPastPrefix", res.Errors)
	}
	// A prefix larger than the memory limit, or a check that reads whole:
	// spooled (and failing where the spool cannot be made).
	if res := run(nowhere, prefixScanner{n: 2 << 20}); len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "spool") {
		t.Errorf("a prefix over the memory limit was not spooled: errors %+v", res.Errors)
	}
	res = run(t.TempDir(), prefixScanner{n: 300 << 10}, describer{wordScanner{check: "a", word: "no such word"}})
	if len(res.Errors) != 0 || len(res.Findings) != 1 || res.Findings[0].Message != wantMsg || len(res.Components) != 1 || res.Components[0].SHA256 != hex.EncodeToString(whole[:]) {
		t.Errorf("spooled: errors %+v components %+v", res.Errors, res.Components)
	}
}
