//go:build !mlwarden_sbatch

package hf

import (
	"net/http"
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
