//go:build !mlwarden_sbatch

package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/server"
)

func TestParseConfig(t *testing.T) {
	for _, c := range []struct {
		name, yaml, err string
	}{
		{"empty", "", ""},
		{"full", "fail-on: critical\ndigest: deny\nno-verdict: warn\nfallback: deny\nscan-deadline: 3s\nnamespaces:\n  a:\n    digest: allow\n", ""},
		{"unknown key", "fail_on: high\n", "field fail_on not found"},
		{"bad severity", "fail-on: severe\n", "unknown severity"},
		{"bad action", "digest: maybe\n", `"maybe" is not one of`},
		{"scan is no digest action", "digest: scan\n", "is not one of"},
		{"bad namespace", "namespaces:\n  x:\n    no-verdict: allow\n", "namespaces.x.no-verdict"},
		{"workers", "workers: 0\n", "at least 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := server.ParseConfig([]byte(c.yaml))
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.name == "full" && (cfg.ScanDeadline != 3*time.Second || cfg.Namespaces["a"].Digest != server.Allow) {
					t.Errorf("parsed %+v", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want %q", err, c.err)
			}
		})
	}
}

func TestCheckListen(t *testing.T) {
	for _, c := range []struct {
		lc server.ListenConfig
		ok bool
	}{
		{server.ListenConfig{Addr: "127.0.0.1:8443"}, true},
		{server.ListenConfig{Addr: "[::1]:8443"}, true},
		{server.ListenConfig{Addr: "localhost:8443"}, true},
		{server.ListenConfig{Addr: ":8443"}, false},
		{server.ListenConfig{Addr: "0.0.0.0:8443"}, false},
		{server.ListenConfig{Addr: ":8443", InsecureHTTP: true}, true},
		{server.ListenConfig{Addr: ":8443", CertFile: "c", KeyFile: "k"}, true},
		{server.ListenConfig{Addr: ":8443", CertFile: "c"}, false},
	} {
		if err := server.CheckListen(c.lc); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.lc, err)
		}
	}
}
