//go:build !mlwarden_sbatch

package sweep

import (
	"bytes"
	"net/url"
	"testing"
)

// FuzzReadReport: a report read back for merging never panics, and one
// that is read holds the report version.
func FuzzReadReport(f *testing.F) {
	f.Add([]byte(`{"version":1,"targets":[{"name":"a","kind":"image"}],"findings":[],"errors":[],"summary":{"critical":0,"high":0,"medium":0,"low":0,"info":0}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"extra":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ReadReport(bytes.NewReader(data))
		if err == nil {
			if _, err := Merge(r); err != nil && len(r.Targets) < 2 {
				t.Errorf("merge of one report: %v", err)
			}
		}
	})
}

// FuzzNextLink: a Hub Link header never sends the listing to another host.
func FuzzNextLink(f *testing.F) {
	f.Add(`<https://huggingface.co/api/models?cursor=x>; rel="next"`)
	f.Add(`</api/models?cursor=y>; rel="next", <https://evil.example/>; rel="prev"`)
	f.Add(`<//evil.example/x>; rel="next"`)
	f.Fuzz(func(t *testing.T, h string) {
		const base = "https://huggingface.co/api/models?author=org"
		next := nextLink(h, base)
		if next == "" {
			return
		}
		u, err := url.Parse(next)
		if err != nil || u.Host != "huggingface.co" || u.Scheme != "https" {
			t.Errorf("%q: next %q leaves the Hub", h, next)
		}
	})
}
