//go:build !mlwarden_sbatch

package hf_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/hubtest"
	"github.com/mlwarden/mlwarden/internal/redistest"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// cachedRepo is modelRepo served with a few more Git LFS files that feed
// the signatures check's judgement of the whole repository: a checksum
// manifest and a model signature stored in LFS (read whole, so cached,
// and judged only when the walk is over), and the weights the manifest
// names, one right, one wrong.
func cachedRepo(t *testing.T) []hubtest.File {
	t.Helper()
	files, err := hubtest.FromDir(modelRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	w := []byte("the weights, as published")
	sum := sha256.Sum256(w)
	files = append(files,
		hubtest.Bytes("lfs/w.bin", w, true),
		hubtest.Bytes("lfs/x.bin", []byte("other weights"), true),
		hubtest.Bytes("lfs/SHA256SUMS", []byte(hex.EncodeToString(sum[:])+"  w.bin\n"+hex.EncodeToString(sum[:])+"  x.bin\n"), true),
		hubtest.Bytes("signed/model.sig", []byte(`{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}`), true),
		hubtest.Bytes("signed/model.safetensors", safetensors(t, 4096), true),
	)
	return files
}

// hubRun scans target with every check and the cache c (nil: --no-cache)
// under build version, and returns the JSON report and the result.
func hubRun(t *testing.T, srv *hubtest.Server, c *cache.Cache, version, target string) ([]byte, *scanners.Result) {
	t.Helper()
	o := scan.Options{Version: version, HF: hubOptions(srv), Image: image.Options{Cache: c, NoCache: c == nil}}
	sc, err := scan.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	res, err := sc.Run(context.Background(), scan.Target{Ref: target})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(res.Result, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return data, res.Result
}

// downloadNotes are the notes that say what this run downloaded and what
// the result cache saved it: they differ between a cold and a warm scan,
// truthfully. Everything else in the report may not. (The note of files
// "downloaded … to hash them" counts any check's reads of neighbours, and
// whether the walk had already fetched the neighbour depends on the order
// of the parallel walk: it is left out too.)
func downloadNotes(n string) bool {
	return strings.HasPrefix(n, "downloaded ") || strings.Contains(n, "not downloaded: their results for these rules were in the result cache") ||
		strings.Contains(n, ") to hash them for a manifest or signature")
}

// withoutDownloadNotes is the report with those notes taken out.
func withoutDownloadNotes(t *testing.T, data []byte) []byte {
	t.Helper()
	var res scanners.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	for i := range res.Targets {
		res.Targets[i].Notes = slices.DeleteFunc(res.Targets[i].Notes, downloadNotes)
	}
	out, err := json.MarshalIndent(&res, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// servedBytes is how many bytes of the file at p the Hub served.
func servedBytes(srv *hubtest.Server, p string) int64 {
	var n int64
	for _, r := range srv.Served(p) {
		n += r[1] - r[0]
	}
	return n
}

// uniqueVersion is a build version no other run used: a shared Redis
// (MLWARDEN_TEST_REDIS) keeps what earlier runs wrote.
func uniqueVersion(what string) string {
	return fmt.Sprintf("%s-%d", what, time.Now().UnixNano())
}

// TestHubWarmRescanEqualsCold: a rescan of a Hub repository whose Git LFS
// files the cache holds gives the report a cold scan and a --no-cache
// scan give — every check, the signatures check's manifest and signature
// judgements of LFS files included — for both backends; the warm scan
// downloads no byte of the files it replays (for Redis: a second process
// with an empty directory of its own), and the files read only in part
// are scanned again.
func TestHubWarmRescanEqualsCold(t *testing.T) {
	files := cachedRepo(t)
	srv := hubtest.New(t)
	commit := srv.AddFiles("org/cached", files)
	target := "hf:org/cached@" + commit
	version := uniqueVersion("hub-warm")
	baseline, base := hubRun(t, srv, nil, version, target)
	if len(base.Errors) > 0 {
		t.Fatalf("errors: %+v", base.Errors)
	}
	for _, want := range []string{`"signatures/checksum-mismatch`, `"signatures/invalid`, `"signatures/unsigned`, `"models/`, `"secrets/`} {
		if !bytes.Contains(baseline, []byte(want)) {
			t.Fatalf("the --no-cache scan has no %s finding: the repository does not test what it should", want)
		}
	}
	lfs := map[string]int64{}
	for _, f := range files {
		if f.LFS != "" {
			lfs[f.Path] = f.Size
		}
	}
	backends := map[string]string{"fs": "fs", "redis": "redis://" + redistest.Addr(t)}
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			open := func() *cache.Cache {
				if name != "fs" {
					dir = t.TempDir() // a second runner's own disk
				}
				c, err := cache.Open(backend, cache.Options{Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			v := version + "-" + name
			baseline, _ := hubRun(t, srv, nil, v, target)
			first, second := open(), open()
			srv.ResetStats()
			cold, _ := hubRun(t, srv, first, v, target)
			// The files the cold scan read whole: these, and only these, are
			// cached (their bytes hashed to the object id the tree lists).
			// (A file may be served more than once: a check reading it as
			// another file's neighbour reads it apart from the walk.)
			var whole, partial []string
			for p, size := range lfs {
				switch n := servedBytes(srv, p); {
				case n >= size:
					whole = append(whole, p)
				case n > 0:
					partial = append(partial, p)
				}
			}
			slices.Sort(whole)
			st := first.Stats()
			if st.Puts < int64(len(whole)) || len(whole) < 20 || len(partial) == 0 {
				t.Fatalf("the cold scan stored %d files of %d LFS files read whole (%d read in part): %+v", st.Puts, len(whole), len(partial), st)
			}
			srv.ResetStats()
			warm, res := hubRun(t, srv, second, v, target)
			hits := second.Stats().Hits
			if hits < int64(len(whole)) {
				t.Errorf("the warm scan replayed %d files, want %d: %+v", hits, len(whole), second.Stats())
			}
			for _, p := range whole {
				if n := servedBytes(srv, p); n > 0 {
					t.Errorf("the warm scan downloaded %d bytes of %s, which the cache holds", n, p)
				}
			}
			for _, p := range partial {
				if servedBytes(srv, p) == 0 {
					t.Errorf("the warm scan did not read %s, which the cold one read only in part (nothing of it may be cached)", p)
				}
			}
			if !bytes.Equal(cold, baseline) {
				t.Errorf("cold scan filling the cache differs from --no-cache:\n%s", diffLines(baseline, cold))
			}
			if w, c := withoutDownloadNotes(t, warm), withoutDownloadNotes(t, cold); !bytes.Equal(w, c) {
				t.Errorf("warm rescan differs from the cold scan:\n%s", diffLines(c, w))
			}
			notes := strings.Join(target0(res).Notes, "\n")
			if want := fmt.Sprintf("%d Git LFS file(s)", hits); !strings.Contains(notes, want) {
				t.Errorf("the warm scan's notes do not say %q: %s", want, notes)
			}
			t.Logf("%d LFS files replayed, %d read in part; warm notes: %s", hits, len(partial), notes)
		})
	}
}

func target0(res *scanners.Result) scanners.Target {
	if len(res.Targets) == 0 {
		return scanners.Target{}
	}
	return res.Targets[0]
}

// TestHubCacheRulesVersionMisses: another build (or rules, checks, config)
// replays nothing a scan under other rules stored.
func TestHubCacheRulesVersionMisses(t *testing.T) {
	srv := hubtest.New(t)
	commit := srv.AddFiles("org/cached", cachedRepo(t))
	target := "hf:org/cached@" + commit
	c, err := cache.Open("fs", cache.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := uniqueVersion("hub-rules")
	hubRun(t, srv, c, v+"-a", target)
	before := c.Stats()
	if before.Puts == 0 {
		t.Fatal("nothing stored")
	}
	hubRun(t, srv, c, v+"-b", target)
	if st := c.Stats(); st.Hits != before.Hits || st.Puts == before.Puts {
		t.Errorf("another rules version: %d hits, %d new entries; want none and some", st.Hits-before.Hits, st.Puts-before.Puts)
	}
	hubRun(t, srv, c, v+"-a", target)
	if st := c.Stats(); st.Hits == before.Hits {
		t.Error("the first rules version again: no hits")
	}
}

// maliciousPickle is a pickle that calls os.system("true") after pad
// bytes of data, and benign the same pickle calling nothing.
func maliciousPickle(pad int) (malicious, benign []byte) {
	var b bytes.Buffer
	b.WriteString("\x80\x04")
	b.WriteByte('\x8e') // BINBYTES8
	for i := range 8 {
		b.WriteByte(byte(uint64(pad) >> (8 * i)))
	}
	b.Write(bytes.Repeat([]byte{'x'}, pad))
	b.WriteByte('0') // POP
	prefix := b.Bytes()
	malicious = append(slices.Clone(prefix), "cos\nsystem\n(X\x04\x00\x00\x00truetR."...)
	benign = append(slices.Clone(prefix), "X\x04\x00\x00\x00trueq\x00."...)
	return malicious, benign
}

// lying is a file served with content data under the tree entry of claim
// (its object id, git id and size).
func lying(p string, data, claim []byte) hubtest.File {
	f := hubtest.Bytes(p, data, true)
	c := hubtest.Bytes(p, claim, true)
	f.OID, f.LFS = c.OID, c.LFS
	return f
}

// TestHubCachePoisoned: a Hub (a mirror, a proxy) that lists a malicious
// file's object id for harmless bytes cannot make the cache say the
// malicious file is clean: nothing is stored under an object id the bytes
// read do not hash to — for a small file (the reader's own check fails the
// read) and for one larger than the reader verifies (the walk's hash of
// every byte it fetched does not match) — so the honest Hub's malicious
// file is scanned, and found, afterwards.
func TestHubCachePoisoned(t *testing.T) {
	for _, pad := range []int{1 << 10, 40 << 20} {
		t.Run(fmt.Sprint(pad), func(t *testing.T) {
			mal, ben := maliciousPickle(pad)
			c, err := cache.Open("fs", cache.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			v := uniqueVersion("hub-poison")

			honest := hubtest.New(t)
			commit := honest.AddFiles("org/model", []hubtest.File{hubtest.Bytes("model.pkl", mal, true)})
			target := "hf:org/model@" + commit
			want, _ := hubRun(t, honest, nil, v, target)
			if !bytes.Contains(want, []byte(`"models/`)) {
				t.Fatalf("the malicious pickle gives no models finding:\n%s", want)
			}

			liar := hubtest.New(t)
			if got := liar.AddFiles("org/model", []hubtest.File{lying("model.pkl", ben, mal)}); got != commit {
				t.Fatalf("the lying Hub lists commit %s, the honest one %s", got, commit)
			}
			hubRun(t, liar, c, v, target)
			if n := servedBytes(liar, "model.pkl"); n != int64(len(ben)) {
				t.Fatalf("the lying Hub served %d of %d bytes: the file was not read whole, which is not what this tests", n, len(ben))
			}
			if st := c.Stats(); st.Puts != 0 {
				t.Fatalf("stored %d entries from a Hub whose bytes do not hash to the object ids it lists", st.Puts)
			}
			got, _ := hubRun(t, honest, c, v, target)
			if !bytes.Equal(withoutDownloadNotes(t, got), withoutDownloadNotes(t, want)) {
				t.Errorf("after the lying Hub, the honest one's report differs:\n%s", diffLines(want, got))
			}
			// The honest bytes are stored: what kept the liar's out was the
			// digest, not a read that was not whole.
			if st := c.Stats(); st.Puts != 1 {
				t.Errorf("the honest Hub's file: %d entries stored, want 1", st.Puts)
			}
		})
	}
}

// TestHubCacheDown: a Redis that is gone is one warning and a cold scan
// with the report --no-cache gives.
func TestHubCacheDown(t *testing.T) {
	srv := hubtest.New(t)
	commit := srv.AddFiles("org/cached", cachedRepo(t))
	target := "hf:org/cached@" + commit
	v := uniqueVersion("hub-down")
	want, _ := hubRun(t, srv, nil, v, target)
	rd := redistest.Start(t)
	var mu sync.Mutex
	var warnings []string
	c, err := cache.Open(rd.URL(), cache.Options{Dir: t.TempDir(), Warn: func(s string) {
		mu.Lock()
		warnings = append(warnings, s)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd.Kill()
	got, res := hubRun(t, srv, c, v, target)
	if len(res.Errors) > 0 {
		t.Errorf("errors: %+v", res.Errors)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("with the cache down the report differs from --no-cache:\n%s", diffLines(want, got))
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "scanning without it") {
		t.Errorf("warnings %q, want one", warnings)
	}
}

func diffLines(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
		if len(out) > 40 {
			break
		}
	}
	return strings.Join(out, "\n")
}

// TestHubCacheNeighbours: an LFS file whose result rests on another file
// of the repository (a requirements file that includes another) is never
// cached: the next commit, where only the included file changed, reports
// what that commit holds.
func TestHubCacheNeighbours(t *testing.T) {
	c, err := cache.Open("fs", cache.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := uniqueVersion("hub-neighbours")
	srv := hubtest.New(t)
	req := hubtest.Bytes("requirements.txt", []byte("-r base.txt\n"), true)
	one := srv.AddFiles("org/one", []hubtest.File{req, hubtest.Bytes("base.txt", []byte("torch\n"), false)})
	two := srv.AddFiles("org/two", []hubtest.File{req, hubtest.Bytes("base.txt", []byte("# nothing to install\n"), false)})
	first, _ := hubRun(t, srv, c, v, "hf:org/one@"+one)
	if !bytes.Contains(first, []byte(`"pins/`)) {
		t.Fatalf("an unpinned torch through -r gives no pins finding:\n%s", first)
	}
	if st := c.Stats(); st.Puts != 0 {
		t.Errorf("stored %d entries for a file whose result rests on a neighbour", st.Puts)
	}
	want, _ := hubRun(t, srv, nil, v, "hf:org/two@"+two)
	got, _ := hubRun(t, srv, c, v, "hf:org/two@"+two)
	if !bytes.Equal(withoutDownloadNotes(t, got), withoutDownloadNotes(t, want)) {
		t.Errorf("the second repository's report differs from --no-cache:\n%s", diffLines(want, got))
	}
}
