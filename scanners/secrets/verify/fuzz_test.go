package verify

import (
	"net/netip"
	"net/url"
	"testing"
)

// FuzzParseEndpoints: whatever the variable holds, every URL it accepts
// is a loopback IP address, with no path.
func FuzzParseEndpoints(f *testing.F) {
	for _, s := range []string{"huggingface=http://127.0.0.1:1", "github=http://[::1]:2/,aws=https://127.9.9.9", "github=http://localhost", "x=y", "github=http://0x7f000001", "github=http://127.0.0.1@evil.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseEndpoints(s)
		if err != nil {
			return
		}
		for name, u := range m {
			p, err := url.Parse(u)
			if err != nil {
				t.Fatalf("%s: accepted %q, which does not parse", name, u)
			}
			ip, err := netip.ParseAddr(p.Hostname())
			if err != nil || !ip.IsLoopback() || p.Path != "" {
				t.Fatalf("%s: accepted %q", name, u)
			}
		}
	})
}
