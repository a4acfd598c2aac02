package verify

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// EnvEndpoints names the variable that replaces providers' base URLs, for
// tests only: "huggingface=http://127.0.0.1:PORT,github=http://[::1]:PORT".
// Each URL replaces the provider's base URL; the request path stays the
// provider's own (/api/whoami-v2, /user).
const EnvEndpoints = "MLWARDEN_VERIFY_ENDPOINTS"

// ParseEndpoints reads EnvEndpoints' value. Every URL must be http or
// https to a loopback IP address (127.0.0.0/8, ::1), with no path, query
// or user: a name is never resolved (nothing is dialled to check it), so
// that the variable can never send a credential off the machine.
func ParseEndpoints(value string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, u, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s: %q is not PROVIDER=URL", EnvEndpoints, part)
		}
		if titleOf(name) == name {
			return nil, fmt.Errorf("%s: unknown provider %q (valid: %s)", EnvEndpoints, name, strings.Join(ProviderNames(), ", "))
		}
		if err := loopbackURL(u); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", EnvEndpoints, name, err)
		}
		out[name] = strings.TrimSuffix(u, "/")
	}
	return out, nil
}

// loopbackURL checks that u is http(s)://LOOPBACK-IP[:PORT] and nothing
// more.
func loopbackURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return errors.New("not a URL")
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return fmt.Errorf("%q: want http:// or https://", u)
	}
	if p.User != nil || (p.Path != "" && p.Path != "/") || p.RawQuery != "" || p.Fragment != "" {
		return fmt.Errorf("%q: only a base URL (scheme, loopback address, port): the path stays the provider's", u)
	}
	ip, err := netip.ParseAddr(p.Hostname())
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: refused: only a loopback IP address (127.0.0.1, ::1) may replace a provider's endpoint, for tests", u)
	}
	return nil
}
