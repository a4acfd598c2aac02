//go:build !mlwarden_sbatch

package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		class  string
		always bool
	}{
		{"169.254.169.254", "metadata", true},
		{"::ffff:169.254.169.254", "metadata", true},
		{"64:ff9b::a9fe:a9fe", "metadata", true}, // NAT64 of 169.254.169.254
		{"::a9fe:a9fe", "metadata", true},        // IPv4-compatible
		{"fd00:ec2::254", "metadata", true},
		{"100.100.100.200", "metadata", true},
		{"168.63.129.16", "metadata", true},
		{"169.254.1.1", "link-local", true},
		{"fe80::1", "link-local", true},
		{"fe80::1%eth0", "link-local", true},
		{"0.0.0.0", "unspecified", true},
		{"::", "unspecified", true},
		{"224.0.0.1", "multicast or broadcast", true},
		{"255.255.255.255", "multicast or broadcast", true},
		{"ff02::1", "multicast or broadcast", true},
		{"127.0.0.1", "loopback", false},
		{"127.9.9.9", "loopback", false},
		{"::1", "loopback", false},
		{"::ffff:127.0.0.1", "loopback", false},
		{"10.1.2.3", "private", false},
		{"172.16.0.1", "private", false},
		{"192.168.1.1", "private", false},
		{"fc00::1", "private", false},
		{"::ffff:10.0.0.1", "private", false},
		{"64:ff9b::a00:1", "private", false}, // NAT64 of 10.0.0.1
		{"100.64.0.1", "reserved", false},
		{"0.1.2.3", "reserved", false},
		{"198.18.0.1", "reserved", false},
		{"240.0.0.1", "reserved", false},
		{"2002:a9fe:a9fe::1", "reserved", false},
		{"93.184.215.14", "", false},
		{"2606:4700::1111", "", false},
		{"64:ff9b::5db8:d70e", "", false}, // NAT64 of a public address
	} {
		a := netip.MustParseAddr(tc.addr)
		class, always := classify(a)
		if class != tc.class || always != tc.always {
			t.Errorf("%s: %q always=%v, want %q always=%v", tc.addr, class, always, tc.class, tc.always)
		}
	}
}

func TestHostAddr(t *testing.T) {
	for _, tc := range []struct {
		host string
		want string // "" for a name
	}{
		{"169.254.169.254", "169.254.169.254"},
		{"2852039166", "169.254.169.254"},
		{"0251.0376.0251.0376", "169.254.169.254"},
		{"0xa9fea9fe", "169.254.169.254"},
		{"0xA9.0xFE.0xA9.0xFE", "169.254.169.254"},
		{"169.254.43518", "169.254.169.254"},
		{"169.16689662", "169.254.169.254"},
		{"127.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"127.0.0.1.", "127.0.0.1"},
		{"[::1]", "::1"},
		{"::ffff:169.254.169.254", "::ffff:169.254.169.254"},
		{"fe80::1%eth0", "fe80::1"},
		{"registry.example", ""},
		{"1.2.3.4.5", ""},
		{"256.1.1.1", ""},
		{"1.2.65536", ""},
		{"0b101", ""},
		{"1_0", ""},
		{"08", ""},
		{"docker.io", ""},
	} {
		a, ok := hostAddr(tc.host)
		got := ""
		if ok {
			got = a.String()
		}
		if got != tc.want {
			t.Errorf("hostAddr(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}

func TestAllowList(t *testing.T) {
	g, err := NewRegistryGuard([]string{"registry.corp", "*.build.corp:5000", "10.0.0.5:*", "[::1]:5001", "localhost:5002", "LOCALHOST:5003"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host, port string
		want       bool
	}{
		{"registry.corp", "443", true},
		{"registry.corp", "80", true},
		{"registry.corp", "", true},
		{"registry.corp.", "443", true},
		{"REGISTRY.corp", "443", true},
		{"registry.corp", "6379", false},
		{"a.build.corp", "5000", true},
		{"a.build.corp", "5001", false},
		{"build.corp", "5000", false},
		{"10.0.0.5", "6379", true},
		{"::ffff:10.0.0.5", "5000", true},
		{"10.0.0.6", "5000", false},
		{"::1", "5001", true},
		{"::1", "5000", false},
		{"localhost", "5002", true},
		{"localhost", "5003", true},
		{"localhost", "6379", false},
		{"127.0.0.1", "5002", false}, // the name is allowed, not the address
	} {
		if got := g.Allowed(tc.host, tc.port); got != tc.want {
			t.Errorf("Allowed(%q, %q) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	for _, bad := range []string{"", "*", "http://r.corp", "r.corp/x", "r.corp:", "r.corp:99999", "r.corp:x", "[::1", "[::1]5000", "r[.corp", "user@r.corp"} {
		if _, err := NewRegistryGuard([]string{bad}); err == nil {
			t.Errorf("allow-list entry %q accepted", bad)
		}
	}
}

// recordingGuard resolves from a table and records every dial, which it
// never makes: no test here sends a packet anywhere.
func recordingGuard(t *testing.T, allow []string, names map[string][]string) (*RegistryGuard, func() []string) {
	t.Helper()
	g, err := NewRegistryGuard(allow)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dials []string
	g.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		addrs, ok := names[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
	g.dial = func(_ context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dials = append(dials, addr)
		mu.Unlock()
		return nil, errors.New("test dial: not connected")
	}
	return g, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), dials...)
	}
}

// TestGuardDial: every name and literal form of an internal address is
// refused before any connection is attempted; allowed and public ones are
// dialled by the address that was checked, never by name again.
func TestGuardDial(t *testing.T) {
	names := map[string][]string{
		"metadata.test":    {"169.254.169.254"},
		"rebind.test":      {"93.184.215.14", "10.0.0.1"}, // one public, one private
		"mapped.test":      {"::ffff:127.0.0.1"},
		"v6ll.test":        {"fe80::1"},
		"imds6.test":       {"fd00:ec2::254"},
		"nat64.test":       {"64:ff9b::a9fe:a9fe"},
		"internal.test":    {"10.20.30.40"},
		"public.test":      {"93.184.215.14", "2606:4700::1111"},
		"allowed.corp":     {"10.20.30.40"},
		"allowed-md.corp":  {"169.254.169.254"},
		"loopback.test":    {"127.0.0.1"},
		"loopback-ok.test": {"127.0.0.1"},
	}
	allow := []string{"allowed.corp", "allowed-md.corp", "loopback-ok.test:5000", "192.168.7.7:5000"}
	for _, tc := range []struct {
		addr    string
		network string
		refused string // the class, or "" when dialled
		dialed  []string
	}{
		{addr: "169.254.169.254:80", refused: "metadata"},
		{addr: "metadata.test:443", refused: "metadata"},
		{addr: "2852039166:80", refused: "metadata"},
		{addr: "0251.0376.0251.0376:80", refused: "metadata"},
		{addr: "0xa9fea9fe:80", refused: "metadata"},
		{addr: "[::ffff:169.254.169.254]:80", refused: "metadata"},
		{addr: "[::ffff:a9fe:a9fe]:80", refused: "metadata"},
		{addr: "[fe80::1%eth0]:443", refused: "link-local"},
		{addr: "v6ll.test:443", refused: "link-local"},
		{addr: "imds6.test:80", refused: "metadata"},
		{addr: "nat64.test:80", refused: "metadata"},
		{addr: "127.0.0.1:6379", refused: "loopback"},
		{addr: "127.1:6379", refused: "loopback"},
		{addr: "[::1]:6379", refused: "loopback"},
		{addr: "mapped.test:6379", refused: "loopback"},
		{addr: "loopback.test:5000", refused: "loopback"},
		{addr: "0.0.0.0:6379", refused: "unspecified"},
		{addr: "[::]:6379", refused: "unspecified"},
		{addr: "10.0.0.1:443", refused: "private"},
		{addr: "internal.test:443", refused: "private"},
		{addr: "rebind.test:443", refused: "private"},
		{addr: "allowed.corp:6379", refused: "private"},    // allowed on its default ports only
		{addr: "allowed-md.corp:443", refused: "metadata"}, // never, allowed or not
		{addr: "192.168.7.7:6379", refused: "private"},
		{addr: "allowed.corp:443", dialed: []string{"10.20.30.40:443"}},
		{addr: "loopback-ok.test:5000", dialed: []string{"127.0.0.1:5000"}},
		{addr: "192.168.7.7:5000", dialed: []string{"192.168.7.7:5000"}},
		{addr: "public.test:443", dialed: []string{"93.184.215.14:443", "[2606:4700::1111]:443"}},
		{addr: "public.test:443", network: "tcp6", dialed: []string{"[2606:4700::1111]:443"}},
	} {
		t.Run(tc.addr+tc.network, func(t *testing.T) {
			g, dials := recordingGuard(t, allow, names)
			network := tc.network
			if network == "" {
				network = "tcp"
			}
			_, err := g.DialContext(t.Context(), network, tc.addr)
			var re *RefusedError
			switch {
			case tc.refused != "":
				if !errors.As(err, &re) || re.Class != tc.refused {
					t.Fatalf("err %v, want refused as %s", err, tc.refused)
				}
				if d := dials(); len(d) > 0 {
					t.Fatalf("refused, yet dialled %v", d)
				}
			case errors.As(err, &re):
				t.Fatalf("refused: %v", err)
			default:
				if d := dials(); fmt.Sprint(d) != fmt.Sprint(tc.dialed) {
					t.Fatalf("dialled %v, want %v", d, tc.dialed)
				}
			}
		})
	}
}

// TestGuardCheckRegistry: the reference-level check refuses literal
// internal addresses and localhost names without resolving anything.
func TestGuardCheckRegistry(t *testing.T) {
	g, dials := recordingGuard(t, []string{"localhost:5000"}, nil)
	for _, tc := range []struct {
		reg     string
		refused bool
	}{
		{"169.254.169.254", true},
		{"169.254.169.254:80", true},
		{"[fd00:ec2::254]", true},
		{"2852039166:80", true},
		{"localhost:6379", true},
		{"LOCALHOST.:6379", true},
		{"foo.localhost:80", true},
		{"127.0.0.1:5000", true},
		{"localhost:5000", false},
		{"10.1.2.3:5000", true},
		{"index.docker.io", false},
		{"registry.example:5000", false}, // judged when dialled
	} {
		err := g.CheckRegistry(tc.reg)
		if (err != nil) != tc.refused {
			t.Errorf("%s: err %v, want refused=%v", tc.reg, err, tc.refused)
		}
	}
	if d := dials(); len(d) > 0 {
		t.Errorf("dialled %v", d)
	}
}

// TestGuardRealLoopback: with the real dialer, a loopback listener is
// reached only when allowed; refused, it accepts nothing.
func TestGuardRealLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	accepted := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted++
			mu.Unlock()
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, tc := range []struct {
		allow []string
		ok    bool
	}{
		{nil, false},
		{[]string{"127.0.0.1:" + port}, true},
	} {
		g, err := NewRegistryGuard(tc.allow)
		if err != nil {
			t.Fatal(err)
		}
		c, err := g.DialContext(t.Context(), "tcp", ln.Addr().String())
		if (err == nil) != tc.ok {
			t.Fatalf("allow %v: err %v", tc.allow, err)
		}
		if c != nil {
			c.Close()
		}
	}
	// The allowed dial connected; wait for its accept, then count.
	for range 200 {
		mu.Lock()
		n := accepted
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if accepted != 1 {
		t.Errorf("the listener accepted %d connections, want the allowed one only", accepted)
	}
}

func TestRegistryMessage(t *testing.T) {
	for _, err := range []error{
		errors.New("dial tcp 127.0.0.1:1: connect: connection refused"),
		errors.New("unexpected status code 200 OK: SECRET-BODY"),
		errors.New("tls: first record does not look like a TLS handshake"),
		context.DeadlineExceeded,
	} {
		got := RegistryMessage("r.example:5000", err)
		if strings.Contains(got, "SECRET") || strings.Contains(got, "refused") || strings.Contains(got, "tls") ||
			got != RegistryMessage("r.example:5000", errors.New("x")) {
			t.Errorf("%v: %q", err, got)
		}
	}
}

// FuzzGuardHost: reading a host as an address and an allow-list entry
// never panics, and a host read as an address is judged as that address.
func FuzzGuardHost(f *testing.F) {
	for _, h := range []string{"169.254.169.254", "2852039166", "0251.0376.0251.0376", "0xa9fea9fe", "[::ffff:a9fe:a9fe]",
		"fe80::1%eth0", "127.1", "localhost:6379", "*.corp:5000", "[::1]:*", "registry.example", "0x", "00", "1.2.3.4.5"} {
		f.Add(h)
	}
	g, err := NewRegistryGuard([]string{"localhost:5000"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		_, _ = parseAllow(host)
		err := g.CheckRegistry(host)
		a, ok := hostAddr(host)
		if !ok {
			return
		}
		if class, _ := classify(a); class == "" && err != nil && !strings.Contains(strings.ToLower(host), "localhost") {
			t.Errorf("%q reads as public %s, yet CheckRegistry refused it: %v", host, a, err)
		}
	})
}
