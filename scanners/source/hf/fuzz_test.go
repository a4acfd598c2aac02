//go:build !mlwarden_sbatch

package hf

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHeaders: the Hub's (or anything's) answer headers the client parses
// — Content-Range, Link, RateLimit, Retry-After — never panic, and what
// they yield is within bounds.
func FuzzHeaders(f *testing.F) {
	f.Add("bytes 0-99/1000", `<https://huggingface.co/api/models/a/b/tree/main?cursor=x>; rel="next"`, `"api";r=0;t=55`, "7")
	f.Add("bytes 5-4/*", `<>; rel=next, <x>; rel="prev"`, "r=1;t=-3", "-1")
	f.Add("bytes", ";", ";;=", "")
	f.Fuzz(func(t *testing.T, cr, link, rl, ra string) {
		if start, end, total, ok := contentRange(cr); ok && (start < 0 || end < start || total < -1) {
			t.Fatalf("contentRange(%q) = %d, %d, %d", cr, start, end, total)
		}
		if next := nextLink(link); next != "" && !strings.Contains(link, next) {
			t.Fatalf("nextLink(%q) = %q, not in the header", link, next)
		}
		h := http.Header{}
		h.Set("RateLimit", rl)
		h.Set("Retry-After", ra)
		if d := retryWait(h, 3); d < 0 {
			t.Fatalf("retryWait = %v", d)
		}
	})
}

// FuzzParseRef: a target either parses to a reference whose name parses
// back to it, or is an error; a parsed id never escapes a path.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"org/model", "datasets/org/d@refs/pr/1", "//x@main", "a/../b", "org/m@v1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		if strings.Contains(r.ID, "..") || strings.HasPrefix(r.ID, "/") || strings.Contains(r.Revision, "..") {
			t.Fatalf("ParseRef(%q) = %+v", s, r)
		}
		again, err := ParseRef(strings.TrimPrefix(r.String(), Scheme+":"))
		if err != nil || again != r {
			t.Fatalf("ParseRef(%q) = %+v; its name %q gives %+v, %v", s, r, r.String(), again, err)
		}
	})
}

// FuzzTreePage: whatever a Hub's tree page holds, listing it never panics
// and what it lists keeps to the listing's bounds (path length and depth,
// files), with no directory map built from more than the bound.
func FuzzTreePage(f *testing.F) {
	f.Add([]byte(`[{"type":"file","path":"config.json","size":10,"oid":"0123456789abcdef0123456789abcdef01234567"},{"type":"directory","path":"a"},{"type":"file","path":"a/w.bin","size":5,"lfs":{"oid":"` + strings.Repeat("ab", 32) + `","size":5}}]`))
	f.Add([]byte(`[{"type":"file","path":"` + strings.Repeat("a/", 300) + `f","size":1}]`))
	f.Add([]byte(`[{"type":"file","path":"` + strings.Repeat("x", 5000) + `","size":1}]`))
	f.Add([]byte(`[{"type":"file","path":"a","size":-1},{"type":"file","path":"b","size":3,"lfs":{"size":4}}]`))
	f.Add([]byte(`[{"type":"file","path":"../x","size":1},{"type":"file","path":"a","size":1},{"type":"file","path":"a/b","size":1},{"type":"file","path":"a","size":1}]`))
	f.Add([]byte(`{"not":"a list"}`))
	f.Fuzz(func(t *testing.T, page []byte) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page) }))
		defer srv.Close()
		o := Options{Endpoint: srv.URL, Getenv: func(string) (string, bool) { return "", false }, MaxFiles: 50}.withDefaults()
		c, err := newClient(o)
		if err != nil {
			t.Fatal(err)
		}
		files, err := c.tree(t.Context(), Ref{Type: "model", ID: "org/m"}, strings.Repeat("0", 40))
		if err != nil {
			return
		}
		if len(files) > o.MaxFiles {
			t.Fatalf("%d files, bound %d", len(files), o.MaxFiles)
		}
		rfs := newRepoFS(t.Context(), &hubSource{o: o, c: c}, strings.Repeat("0", 40), newStats(o.DownloadLimit))
		for _, f := range files {
			if len(f.Path) > maxPathLen || strings.Count(f.Path, "/") >= maxDepth {
				t.Fatalf("listed %.60q (%d bytes)", f.Path, len(f.Path))
			}
			if !fs.ValidPath(f.Path) || rfs.files[f.Path] != nil {
				continue
			}
			if rfs.add(f, o.MaxFiles) != nil {
				return
			}
		}
		if err := rfs.index(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(rfs.dirs) > o.MaxFiles+1 {
			t.Fatalf("%d directories, bound %d", len(rfs.dirs), o.MaxFiles)
		}
	})
}
