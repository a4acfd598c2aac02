// Package vex reads VEX documents — OpenVEX (v0.2.0) and CycloneDX VEX —
// and suppresses the vulns findings their statements say do not apply: a
// statement of status not_affected (with its justification) or fixed whose
// product is the finding's package (by package URL) and whose vulnerability
// is the finding's advisory (by ID or alias). A suppressed finding stays in
// the result with the statement's status, justification and document,
// counted apart; nothing is dropped.
//
// OpenVEX is parsed here with a typed struct rather than
// github.com/openvex/go-vex: that module is not served by the module proxy
// this project builds with, and the format is one small JSON document
// (TestOpenVEXSchema checks what we write against the published schema).
package vex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/mlwarden/mlwarden/scanners"
)

// Statuses of a statement (OpenVEX's).
const (
	StatusNotAffected        = "not_affected"
	StatusAffected           = "affected"
	StatusFixed              = "fixed"
	StatusUnderInvestigation = "under_investigation"
)

// Justifications are OpenVEX's status justification labels.
var Justifications = []string{
	"component_not_present",
	"vulnerable_code_not_present",
	"vulnerable_code_not_in_execute_path",
	"vulnerable_code_cannot_be_controlled_by_adversary",
	"inline_mitigations_already_exist",
}

// Statement is one VEX statement, from either format.
type Statement struct {
	// Vulnerability is its name; Aliases its other names.
	Vulnerability string
	Aliases       []string
	Products      []Product
	Status        string
	// Justification is the label (OpenVEX's, or CycloneDX's analysis
	// justification as written); Impact the free-form impact statement.
	Justification, Impact string
	Timestamp             time.Time
	// File and Index say where it is written (the document, the
	// statement's 1-based place in it).
	File  string
	Index int
}

// Product is what a statement applies to: a package URL or another
// identifier, and subcomponents (package URLs) inside it.
type Product struct {
	ID            string
	PURL          string
	Subcomponents []string
}

// maxDocument bounds one document read.
const maxDocument = 32 << 20

// Set is the statements of every document given.
type Set struct {
	statements []Statement
}

// Len is the number of statements.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.statements)
}

// Load reads every document; one that does not parse, or that is neither
// OpenVEX nor CycloneDX, is an error naming it (exit 2).
func Load(paths []string) (*Set, error) {
	s := &Set{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("vex: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxDocument+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("vex %s: %w", p, err)
		}
		if len(data) > maxDocument {
			return nil, fmt.Errorf("vex %s: larger than %d bytes", p, maxDocument)
		}
		st, err := Parse(p, data)
		if err != nil {
			return nil, err
		}
		s.statements = append(s.statements, st...)
	}
	return s, nil
}

// Parse reads one document: OpenVEX (an @context of https://openvex.dev/ns)
// or a CycloneDX BOM with vulnerabilities (bomFormat CycloneDX).
func Parse(name string, data []byte) ([]Statement, error) {
	var probe struct {
		Context   string `json:"@context"`
		BOMFormat string `json:"bomFormat"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("vex %s: not a JSON document: %w", name, err)
	}
	switch {
	case strings.HasPrefix(probe.Context, "https://openvex.dev/ns"):
		return parseOpenVEX(name, data)
	case probe.BOMFormat == "CycloneDX":
		return parseCycloneDX(name, data)
	}
	return nil, fmt.Errorf("vex %s: neither OpenVEX (@context https://openvex.dev/ns/…) nor CycloneDX (bomFormat CycloneDX)", name)
}

// The OpenVEX document, as the spec (v0.2.0) writes it.
type openVEX struct {
	Context    string      `json:"@context"`
	ID         string      `json:"@id"`
	Author     string      `json:"author"`
	Role       string      `json:"role,omitempty"`
	Timestamp  *time.Time  `json:"timestamp"`
	Version    int         `json:"version"`
	Tooling    string      `json:"tooling,omitempty"`
	Statements []openVEXSt `json:"statements"`
}

type openVEXSt struct {
	ID              string           `json:"@id,omitempty"`
	Vulnerability   openVEXVuln      `json:"vulnerability"`
	Timestamp       *time.Time       `json:"timestamp,omitempty"`
	Products        []openVEXProduct `json:"products,omitempty"`
	Status          string           `json:"status"`
	Justification   string           `json:"justification,omitempty"`
	ImpactStatement string           `json:"impact_statement,omitempty"`
	ActionStatement string           `json:"action_statement,omitempty"`
	StatusNotes     string           `json:"status_notes,omitempty"`
	Supplier        string           `json:"supplier,omitempty"`
}

type openVEXVuln struct {
	ID          string   `json:"@id,omitempty"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
}

type openVEXProduct struct {
	ID            string             `json:"@id,omitempty"`
	Identifiers   map[string]string  `json:"identifiers,omitempty"`
	Hashes        map[string]string  `json:"hashes,omitempty"`
	Subcomponents []openVEXComponent `json:"subcomponents,omitempty"`
}

type openVEXComponent struct {
	ID          string            `json:"@id,omitempty"`
	Identifiers map[string]string `json:"identifiers,omitempty"`
	Hashes      map[string]string `json:"hashes,omitempty"`
}

func (c openVEXComponent) purl() string {
	if p := c.Identifiers["purl"]; p != "" {
		return p
	}
	if strings.HasPrefix(c.ID, "pkg:") {
		return c.ID
	}
	return ""
}

func parseOpenVEX(name string, data []byte) ([]Statement, error) {
	var doc openVEX
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("vex %s: OpenVEX: %w", name, err)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("vex %s: OpenVEX: %s", name, fmt.Sprintf(format, args...))
	}
	switch {
	case doc.ID == "":
		return nil, fail("@id is required")
	case doc.Author == "":
		return nil, fail("author is required")
	case doc.Timestamp == nil:
		return nil, fail("timestamp is required")
	case doc.Version < 1:
		return nil, fail("version is required (1 or more)")
	case len(doc.Statements) == 0:
		return nil, fail("no statements")
	}
	var out []Statement
	for i, st := range doc.Statements {
		at := func(format string, args ...any) error {
			return fail("statement %d: %s", i+1, fmt.Sprintf(format, args...))
		}
		if st.Vulnerability.Name == "" {
			return nil, at("vulnerability.name is required")
		}
		switch st.Status {
		case StatusNotAffected:
			if st.Justification == "" && st.ImpactStatement == "" {
				return nil, at("status not_affected needs a justification or an impact_statement")
			}
		case StatusAffected, StatusFixed, StatusUnderInvestigation:
		default:
			return nil, at("status %q is not one of not_affected, affected, fixed, under_investigation", st.Status)
		}
		if st.Justification != "" && !slices.Contains(Justifications, st.Justification) {
			return nil, at("justification %q is not one of %s", st.Justification, strings.Join(Justifications, ", "))
		}
		s := Statement{Vulnerability: st.Vulnerability.Name, Aliases: st.Vulnerability.Aliases, Status: st.Status,
			Justification: st.Justification, Impact: st.ImpactStatement, Timestamp: *doc.Timestamp, File: name, Index: i + 1}
		if st.Vulnerability.ID != "" {
			s.Aliases = append(slices.Clone(s.Aliases), st.Vulnerability.ID)
		}
		if st.Timestamp != nil {
			s.Timestamp = *st.Timestamp
		}
		for _, p := range st.Products {
			pr := Product{ID: p.ID, PURL: openVEXComponent{ID: p.ID, Identifiers: p.Identifiers}.purl()}
			for _, c := range p.Subcomponents {
				if u := c.purl(); u != "" {
					pr.Subcomponents = append(pr.Subcomponents, u)
				}
			}
			s.Products = append(s.Products, pr)
		}
		if len(s.Products) == 0 {
			return nil, at("no products")
		}
		out = append(out, s)
	}
	return out, nil
}

// parseCycloneDX reads a CycloneDX BOM's vulnerabilities as statements: an
// analysis state not_affected or false_positive is not_affected (with the
// analysis justification as written), resolved is fixed, exploitable is
// affected, in_triage under_investigation. A vulnerability's affects name
// components by bom-ref (resolved to their purl) or by purl.
func parseCycloneDX(name string, data []byte) ([]Statement, error) {
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return nil, fmt.Errorf("vex %s: CycloneDX: %w", name, err)
	}
	if bom.Vulnerabilities == nil || len(*bom.Vulnerabilities) == 0 {
		return nil, fmt.Errorf("vex %s: CycloneDX: no vulnerabilities: not a VEX document", name)
	}
	refs := map[string]string{}
	var walk func(cs *[]cdx.Component)
	walk = func(cs *[]cdx.Component) {
		if cs == nil {
			return
		}
		for _, c := range *cs {
			if c.BOMRef != "" && c.PackageURL != "" {
				refs[c.BOMRef] = c.PackageURL
			}
			walk(c.Components)
		}
	}
	if bom.Metadata != nil && bom.Metadata.Component != nil {
		c := bom.Metadata.Component
		if c.BOMRef != "" && c.PackageURL != "" {
			refs[c.BOMRef] = c.PackageURL
		}
	}
	walk(bom.Components)
	var ts time.Time
	if bom.Metadata != nil && bom.Metadata.Timestamp != "" {
		ts, _ = time.Parse(time.RFC3339, bom.Metadata.Timestamp)
	}
	var out []Statement
	for i, v := range *bom.Vulnerabilities {
		if v.ID == "" {
			return nil, fmt.Errorf("vex %s: CycloneDX: vulnerability %d: id is required", name, i+1)
		}
		if v.Analysis == nil || v.Analysis.State == "" {
			continue // no analysis: says nothing
		}
		s := Statement{Vulnerability: v.ID, Justification: string(v.Analysis.Justification), Impact: v.Analysis.Detail,
			Timestamp: ts, File: name, Index: i + 1}
		if v.Analysis.LastUpdated != "" {
			if t, err := time.Parse(time.RFC3339, v.Analysis.LastUpdated); err == nil {
				s.Timestamp = t
			}
		}
		switch v.Analysis.State {
		case cdx.IASNotAffected, cdx.IASFalsePositive:
			s.Status = StatusNotAffected
			if s.Justification == "" && s.Impact == "" {
				s.Impact = string(v.Analysis.State)
			}
		case cdx.IASResolved, cdx.IASResolvedWithPedigree:
			s.Status = StatusFixed
		case cdx.IASExploitable:
			s.Status = StatusAffected
		case cdx.IASInTriage:
			s.Status = StatusUnderInvestigation
		default:
			return nil, fmt.Errorf("vex %s: CycloneDX: vulnerability %d (%s): unknown analysis state %q", name, i+1, v.ID, v.Analysis.State)
		}
		if v.References != nil {
			for _, r := range *v.References {
				if r.ID != "" {
					s.Aliases = append(s.Aliases, r.ID)
				}
			}
		}
		if v.Affects != nil {
			for _, a := range *v.Affects {
				u := refs[a.Ref]
				if u == "" && strings.HasPrefix(a.Ref, "pkg:") {
					u = a.Ref
				}
				if u == "" {
					if _, frag, ok := strings.Cut(a.Ref, "#"); ok {
						u = refs[frag] // urn:cdx:serial/version#bom-ref
					}
				}
				s.Products = append(s.Products, Product{ID: a.Ref, PURL: u})
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// Apply marks the unsuppressed vulns findings of res that a statement
// covers and recounts the summary; it returns how many it marked. Among the
// statements about one finding the latest (by timestamp, then by the order
// given) decides: not_affected and fixed suppress it, affected and
// under_investigation leave it as it is.
func (s *Set) Apply(res *scanners.Result) int {
	if s.Len() == 0 {
		return 0
	}
	targets := make(map[string]scanners.Target, len(res.Targets))
	for _, t := range res.Targets {
		targets[t.Name] = t
	}
	n := 0
	for i := range res.Findings {
		f := &res.Findings[i]
		if f.Suppressed != "" || f.Vulnerability == nil {
			continue
		}
		st := s.Match(*f.Vulnerability, targets[f.Target])
		if st == nil || (st.Status != StatusNotAffected && st.Status != StatusFixed) {
			continue
		}
		f.Suppressed, f.Justification = st.reason()
		n++
	}
	if n > 0 {
		hidden := res.Summary.Hidden
		res.Summary = scanners.Summarize(res.Findings)
		res.Summary.Hidden = hidden
	}
	return n
}

// reason is what a suppressed finding says, and its justification.
func (st *Statement) reason() (string, string) {
	why := st.Justification
	just := st.Justification
	if st.Status == StatusFixed {
		just = StatusFixed
	}
	if st.Impact != "" {
		if why != "" {
			why += ": "
		}
		why += st.Impact
	}
	msg := fmt.Sprintf("VEX %s", st.Status)
	if why != "" {
		msg += " (" + why + ")"
	}
	return fmt.Sprintf("%s, statement %d of %s", msg, st.Index, st.File), just
}

// Match returns the statement that decides about vulnerability v in target
// t, or nil when none is about it.
func (s *Set) Match(v scanners.Vulnerability, t scanners.Target) *Statement {
	pkg, err := ParsePURL(v.PURL)
	if err != nil {
		return nil
	}
	var best *Statement
	for i := range s.statements {
		st := &s.statements[i]
		if !st.names(v) || !st.covers(pkg, t) {
			continue
		}
		if best == nil || !st.Timestamp.Before(best.Timestamp) {
			best = st
		}
	}
	return best
}

// names reports whether the statement is about vulnerability v: its name
// or an alias is v's ID or one of v's aliases.
func (st *Statement) names(v scanners.Vulnerability) bool {
	ids := append([]string{v.ID}, v.Aliases...)
	for _, n := range append([]string{st.Vulnerability}, st.Aliases...) {
		for _, id := range ids {
			if n != "" && strings.EqualFold(n, id) {
				return true
			}
		}
	}
	return false
}

// covers reports whether a product of the statement is package pkg: the
// product's purl matches it, or the product is the target (an image by
// digest, or its name) and one of its subcomponents matches it.
func (st *Statement) covers(pkg PURL, t scanners.Target) bool {
	for _, p := range st.Products {
		if len(p.Subcomponents) == 0 {
			if q, err := ParsePURL(p.PURL); err == nil && q.Matches(pkg) {
				return true
			}
			continue
		}
		if !isTarget(p, t) {
			continue
		}
		for _, sc := range p.Subcomponents {
			if q, err := ParsePURL(sc); err == nil && q.Matches(pkg) {
				return true
			}
		}
	}
	return false
}

// isTarget reports whether product p identifies target t: an OCI purl or
// an @id with t's digest, or t's name or reference.
func isTarget(p Product, t scanners.Target) bool {
	if t.Name == "" {
		return false
	}
	ref := t.Name
	for _, s := range []string{"registry:", "oci:", "docker-archive:", "dir:", "file:", "git:", "hf:"} {
		ref = strings.TrimPrefix(ref, s)
	}
	if p.ID == t.Name || p.ID == ref || p.PURL != "" && p.PURL == ref {
		return true
	}
	if t.Digest == "" {
		return false
	}
	if q, err := ParsePURL(p.PURL); err == nil && q.Type == "oci" {
		return q.Version == t.Digest
	}
	return strings.HasSuffix(p.ID, "@"+t.Digest)
}

var errNoPURL = errors.New("not a package URL")
