//go:build !mlwarden_sbatch

package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// The registry guard (issue 37, items 22 and 23).
//
// An admitted Pod, a Harbor scan request and a registry event each name the
// registry the server then contacts, so without a guard the webhook is a
// probe of the cluster's own network: 169.254.169.254 (cloud metadata),
// localhost:6379, a private service. The guard decides on the addresses a
// connection would really go to, at dial time — after DNS, so a name that
// resolves to a private address, an IPv6 or IPv4-mapped form, a decimal or
// octal IPv4 the resolver accepts, a token realm or a redirect that points
// inside are all refused the same way — and it dials only the addresses it
// checked, so the name cannot resolve differently between the check and
// the connection.
//
//   - link-local (169.254.0.0/16, fe80::/10), cloud metadata addresses
//     (169.254.169.254, fd00:ec2::254, 100.100.100.200, 168.63.129.16),
//     unspecified, multicast and broadcast addresses are always refused;
//   - loopback (127.0.0.0/8, ::1), private (RFC 1918, fc00::/7), shared
//     (100.64.0.0/10) and other reserved ranges are refused unless the
//     registry is in the allow-list (serve.allow_registries,
//     --allow-registry): HOST (its default ports, 443 and 80), HOST:PORT,
//     with globs (*.corp.example, 10.0.0.5:*, 127.0.0.1:*).
//
// What a refused or failed request says to the requester never tells one
// kind of failure of the connection from another (open, closed, filtered,
// TLS) and never holds what the remote end sent: RegistryMessage. The
// details go to the server log.

// RefusedError is a connection the guard refused before connecting.
type RefusedError struct {
	// Host is the name or address asked for; Addr the address it resolved
	// to that is refused (the same for a literal address).
	Host string
	Port string
	Addr netip.Addr
	// Class says what kind of address it is: "link-local", "metadata",
	// "loopback", "private", ...
	Class string
	// Always is set for the classes the allow-list cannot open.
	Always bool
}

func (e *RefusedError) Error() string {
	if e.Always {
		return fmt.Sprintf("registry address refused: %s resolves to %s, a %s address, which is never contacted", e.Host, e.Addr, e.Class)
	}
	return fmt.Sprintf("registry address refused: %s resolves to %s, a %s address not in allow_registries", e.Host, e.Addr, e.Class)
}

// public is what a requester is told: it names the registry as the
// requester wrote it and never the address a name resolved to.
func (e *RefusedError) public(registry string) string {
	if e.Always {
		return fmt.Sprintf("registry %s is not allowed: it is or resolves to a link-local, metadata or reserved address, which mlwarden never contacts", registry)
	}
	return fmt.Sprintf("registry %s is not allowed: it is or resolves to a loopback or private address; an operator can allow it with serve.allow_registries (--allow-registry)", registry)
}

// RegistryGuard checks and makes the connections to registries.
type RegistryGuard struct {
	allow []allowEntry
	// lookup resolves a name; dial connects to a checked address. Tests
	// replace both (guard_internal_test.go).
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

type allowEntry struct {
	host, port string // glob patterns; port "" means the default ports
}

// NewRegistryGuard returns a guard that allows the loopback and private
// registries the patterns name (HOST, HOST:PORT, [IPv6]:PORT; path.Match
// globs in either part).
func NewRegistryGuard(allow []string) (*RegistryGuard, error) {
	g := &RegistryGuard{
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		dial: (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	for _, a := range allow {
		e, err := parseAllow(a)
		if err != nil {
			return nil, err
		}
		g.allow = append(g.allow, e)
	}
	return g, nil
}

// ValidateAllowRegistries checks allow-list patterns (config validation).
func ValidateAllowRegistries(allow []string) error {
	for _, a := range allow {
		if _, err := parseAllow(a); err != nil {
			return err
		}
	}
	return nil
}

func parseAllow(a string) (allowEntry, error) {
	s := strings.ToLower(strings.TrimSpace(a))
	bad := func(why string) (allowEntry, error) {
		return allowEntry{}, fmt.Errorf("allow_registries: %q: %s (want HOST or HOST:PORT, globs allowed)", a, why)
	}
	if s == "" || strings.ContainsAny(s, "/@ ") || strings.Contains(s, "://") {
		return bad("not a registry host")
	}
	var e allowEntry
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return bad("unclosed [")
		}
		e.host = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok || p == "" {
				return bad("want [IPv6]:PORT")
			}
			e.port = p
		}
	case strings.Count(s, ":") > 1:
		e.host = s // a bare IPv6 address: default ports
	default:
		h, p, found := strings.Cut(s, ":")
		if found && p == "" {
			return bad("empty port")
		}
		e.host, e.port = h, p
	}
	if e.host == "" || e.host == "*" && e.port == "" {
		return bad("allows every host")
	}
	for _, pat := range []string{e.host, e.port} {
		if _, err := path.Match(pat, ""); err != nil {
			return bad("bad glob")
		}
	}
	if e.port != "" && !strings.ContainsAny(e.port, "*?[") {
		if n, err := strconv.Atoi(e.port); err != nil || n < 1 || n > 65535 {
			return bad("bad port")
		}
	}
	return e, nil
}

// Allowed reports whether host (a name or an address, without brackets)
// on port is in the allow-list. An entry without a port allows the
// default ports, 443 and 80, as a registry named without a port is reached.
func (g *RegistryGuard) Allowed(host, port string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().WithZone("").String()
	}
	for _, e := range g.allow {
		hostPat := e.host
		if a, err := netip.ParseAddr(hostPat); err == nil {
			hostPat = a.Unmap().String()
		}
		if ok, _ := path.Match(hostPat, host); !ok {
			continue
		}
		if e.port == "" {
			if port == "443" || port == "80" || port == "" {
				return true
			}
			continue
		}
		if ok, _ := path.Match(e.port, port); ok {
			return true
		}
	}
	return false
}

// classify says what kind of non-public address a is ("" for a public
// one) and whether the allow-list can open it.
func classify(a netip.Addr) (class string, always bool) {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		// Addresses that carry an IPv4 address (NAT64, IPv4-compatible) are
		// judged by it.
		b := a.As16()
		if nat64.Contains(a) || ipv4Compat.Contains(a) && !a.IsLoopback() && !a.IsUnspecified() {
			v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
			if c, al := classify(v4); c != "" {
				return c, al
			}
			if ipv4Compat.Contains(a) {
				return "reserved", true
			}
			return "", false
		}
	}
	for _, m := range metadataAddrs {
		if a == m {
			return "metadata", true
		}
	}
	switch {
	case a.IsUnspecified():
		return "unspecified", true
	case a.IsLinkLocalUnicast():
		return "link-local", true
	case a.IsMulticast(), a == broadcast:
		return "multicast or broadcast", true
	case a.IsLoopback():
		return "loopback", false
	case a.IsPrivate():
		return "private", false
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return "reserved", false
		}
	}
	return "", false
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	ipv4Compat = netip.MustParsePrefix("::/96")
	broadcast  = netip.MustParseAddr("255.255.255.255")
	// Cloud metadata and platform endpoints: AWS (and its IPv6 form), GCP,
	// Azure, Oracle, OpenStack (169.254.169.254, link-local anyway), Alibaba
	// (100.100.100.200) and Azure's wire server (168.63.129.16, public).
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"),
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("100.100.100.200"),
		netip.MustParseAddr("168.63.129.16"),
	}
	// Ranges that are not the public Internet, besides loopback, RFC 1918
	// and fc00::/7 (netip's IsPrivate).
	reserved = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),       // this network
		netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT, some clusters)
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved
		netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
		netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
		netip.MustParsePrefix("100::/64"),        // discard-only
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
		netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, ORCHIDv2, ...)
		netip.MustParsePrefix("2002::/16"),       // 6to4: carries an IPv4 address
		netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	}
)

// hostAddr reads a literal address as a resolver would: IPv4, IPv6 (in
// brackets or not, with a zone) and the legacy inet_aton forms (decimal
// 2852039166, octal 0251.0376.0251.0376, hex 0xa9fea9fe, 1 to 4 parts).
func hostAddr(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a.WithZone(""), true
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*(len(vals)-1)) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// CheckRegistry judges a registry as an image reference names it (host or
// host:port) without resolving or connecting: a literal address or a
// localhost name that is refused is an error, so that the answer says so
// before anything is asked. Names are judged again, with every address
// they resolve to, when connected to.
func (g *RegistryGuard) CheckRegistry(registry string) error {
	host, port := registry, ""
	if h, p, err := net.SplitHostPort(registry); err == nil {
		host, port = h, p
	}
	lh := strings.TrimSuffix(strings.ToLower(host), ".")
	var a netip.Addr
	switch {
	case lh == "localhost" || strings.HasSuffix(lh, ".localhost"):
		a = netip.MustParseAddr("127.0.0.1")
	default:
		var ok bool
		if a, ok = hostAddr(host); !ok {
			return nil
		}
	}
	return g.judge(host, port, a)
}

func (g *RegistryGuard) judge(host, port string, a netip.Addr) error {
	class, always := classify(a)
	if class == "" || !always && (g.Allowed(host, port) || g.Allowed(a.Unmap().String(), port)) {
		return nil
	}
	return &RefusedError{Host: host, Port: port, Addr: a, Class: class, Always: always}
}

// DialContext resolves addr's host, refuses it when any of its addresses
// is refused, and connects to the addresses it checked (never by name
// again). It is the dial function of every connection the server makes to
// a registry: tag resolution, manifests and blobs, token endpoints,
// redirects, signatures and referrers.
func (g *RegistryGuard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, ok := hostAddr(host); ok {
		addrs = []netip.Addr{a}
	} else if addrs, err = g.lookup(ctx, host); err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	for _, a := range addrs {
		if err := g.judge(host, port, a); err != nil {
			return nil, err
		}
	}
	var first error
	for _, a := range addrs {
		a = a.Unmap()
		if network == "tcp4" && !a.Is4() || network == "tcp6" && !a.Is6() {
			continue
		}
		c, err := g.dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = &net.DNSError{Err: "no address of the network " + network, Name: host, IsNotFound: true}
	}
	return nil, first
}

// Transport is an HTTP transport whose connections go through the guard
// (go-containerregistry's default transport otherwise). remote.WithTransport
// wraps it with authentication and retries, and redirects are followed
// through it, so every hop is checked.
func (g *RegistryGuard) Transport() http.RoundTripper {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = g.DialContext
	return t
}

// knownRegistryCodes are the registry API's error codes a requester may be
// told: they come from a registry that answered, never from the text of a
// body.
var knownRegistryCodes = map[transport.ErrorCode]string{
	transport.ManifestUnknownErrorCode: "manifest unknown: check the tag or digest",
	transport.NameUnknownErrorCode:     "repository unknown: check the repository name",
	transport.NameInvalidErrorCode:     "repository name invalid",
	transport.UnauthorizedErrorCode:    "unauthorized: check the pull credentials",
	transport.DeniedErrorCode:          "access denied: check the pull credentials",
	transport.TooManyRequestsErrorCode: "rate-limited: try again later",
	transport.UnsupportedErrorCode:     "operation unsupported by the registry",
	transport.BlobUnknownErrorCode:     "blob unknown",
	transport.ManifestInvalidErrorCode: "manifest invalid",
	transport.TagInvalidErrorCode:      "tag invalid",
}

// RegistryMessage is what a requester is told about a failed registry
// request to registry: a refusal says why, a registry's own error code is
// named, and everything else — refused, reset, timed out, TLS, an answer
// that is not a registry's — is the same line, so that the answer neither
// tells ports apart nor carries what the remote end sent.
func RegistryMessage(registry string, err error) string {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.public(registry)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		for _, d := range te.Errors {
			if msg, ok := knownRegistryCodes[d.Code]; ok {
				return fmt.Sprintf("registry %s answered: %s", registry, msg)
			}
		}
	}
	return fmt.Sprintf("registry %s could not be reached or did not answer as a registry (details in the mlwarden log)", registry)
}
