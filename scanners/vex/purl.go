package vex

import (
	"fmt"
	"net/url"
	"strings"
)

// PURL is a parsed package URL (github.com/package-url/purl-spec):
// pkg:TYPE/NAMESPACE/NAME@VERSION?QUALIFIERS#SUBPATH. Written by hand: no
// purl library is served by the module proxy this project builds with, and
// matching needs only the parts below.
type PURL struct {
	Type, Namespace, Name, Version string
	Qualifiers                     map[string]string
	Subpath                        string
}

// ParsePURL reads a package URL. Type is lower-cased; a pypi name is
// normalised as the spec says (lower case, '_' as '-').
func ParsePURL(s string) (PURL, error) {
	rest, ok := strings.CutPrefix(s, "pkg:")
	if !ok {
		return PURL{}, fmt.Errorf("%q: %w", s, errNoPURL)
	}
	var p PURL
	rest, p.Subpath, _ = strings.Cut(rest, "#")
	rest, quals, _ := strings.Cut(rest, "?")
	if quals != "" {
		p.Qualifiers = map[string]string{}
		for _, kv := range strings.Split(quals, "&") {
			k, v, _ := strings.Cut(kv, "=")
			uv, err := url.PathUnescape(v)
			if err != nil {
				return PURL{}, fmt.Errorf("%q: qualifier %s: %w", s, k, err)
			}
			p.Qualifiers[strings.ToLower(k)] = uv
		}
	}
	rest = strings.TrimLeft(rest, "/")
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		v, err := url.PathUnescape(rest[i+1:])
		if err != nil {
			return PURL{}, fmt.Errorf("%q: version: %w", s, err)
		}
		rest, p.Version = rest[:i], v
	}
	typ, path, ok := strings.Cut(rest, "/")
	if !ok || typ == "" || path == "" {
		return PURL{}, fmt.Errorf("%q: want pkg:TYPE/NAME: %w", s, errNoPURL)
	}
	p.Type = strings.ToLower(typ)
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, seg := range segs {
		u, err := url.PathUnescape(seg)
		if err != nil {
			return PURL{}, fmt.Errorf("%q: %w", s, err)
		}
		segs[i] = u
	}
	p.Name = segs[len(segs)-1]
	p.Namespace = strings.Join(segs[:len(segs)-1], "/")
	if p.Type == "pypi" {
		p.Name = strings.ReplaceAll(strings.ToLower(p.Name), "_", "-")
	}
	if p.Type == "generic" || p.Type == "pypi" || p.Type == "github" {
		p.Namespace = strings.ToLower(p.Namespace)
	}
	return p, nil
}

// Matches reports whether p, a statement's product, covers q, a finding's
// package: type, namespace and name equal; p's version, when it has one,
// equal to q's (without one p covers every version); each of p's
// qualifiers present in q with the same value (p without qualifiers covers
// q with any); p's subpath, when set, equal to q's. This is how OpenVEX
// tools (vexctl, Trivy) match a product to a component.
func (p PURL) Matches(q PURL) bool {
	if p.Type != q.Type || p.Namespace != q.Namespace || p.Name != q.Name {
		return false
	}
	if p.Version != "" && p.Version != q.Version {
		return false
	}
	for k, v := range p.Qualifiers {
		if q.Qualifiers[k] != v {
			return false
		}
	}
	return p.Subpath == "" || p.Subpath == q.Subpath
}
