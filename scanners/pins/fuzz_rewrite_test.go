//go:build !mlwarden_sbatch

package pins

import "testing"

// fuzzSites checks the sites Rewrite finds without a registry: each must
// be the text it names.
func fuzzSites(t *testing.T, p string, data []byte) {
	if sites, _, err := imageSites(p, data); err == nil {
		for _, s := range sites {
			if s.start < 0 || s.end > len(data) || s.start > s.end || string(data[s.start:s.end]) != s.written+s.tail {
				t.Fatalf("site %+v does not match the file", s)
			}
		}
	}
}
