//go:build !mlwarden_sbatch

package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/server/verdict"
)

// Harbor pluggable scanner adapter API (spec v1.1/v1.2) media types.
const (
	HarborMetadataMIME     = "application/vnd.scanner.adapter.metadata+json; version=1.1"
	HarborScanRequestMIME  = "application/vnd.scanner.adapter.scan.request+json"
	HarborScanResponseMIME = "application/vnd.scanner.adapter.scan.response+json; version=1.0"
	HarborErrorMIME        = "application/vnd.scanner.adapter.error+json; version=1.0"
	HarborVulnReportMIME   = "application/vnd.security.vulnerability.report; version=1.1"
	HarborVulnReport10MIME = "application/vnd.scanner.adapter.vuln.report.harbor+json; version=1.0"
	HarborRawReportMIME    = "application/vnd.scanner.adapter.vuln.report.raw"
	// MlwardenVerdictMIME is the verdict as mlwarden writes it (raw report).
	MlwardenVerdictMIME = "application/vnd.mlwarden.verdict.v1+json"
)

// harborRefreshAfter is the poll interval suggested to Harbor, in seconds.
const harborRefreshAfter = 2

type harborScanner struct {
	Name    string `json:"name"`
	Vendor  string `json:"vendor"`
	Version string `json:"version"`
}

type harborArtifact struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
	Tag        string `json:"tag,omitempty"`
	MimeType   string `json:"mime_type,omitempty"`
}

type harborScanRequest struct {
	Registry struct {
		URL           string `json:"url"`
		Authorization string `json:"authorization"`
	} `json:"registry"`
	Artifact harborArtifact `json:"artifact"`
}

type harborVuln struct {
	ID               string         `json:"id"`
	Package          string         `json:"package"`
	Version          string         `json:"version"`
	FixVersion       string         `json:"fix_version,omitempty"`
	Severity         string         `json:"severity"`
	Description      string         `json:"description"`
	Links            []string       `json:"links,omitempty"`
	VendorAttributes map[string]any `json:"vendor_attributes,omitempty"`
}

type harborReport struct {
	GeneratedAt     time.Time      `json:"generated_at"`
	Artifact        harborArtifact `json:"artifact"`
	Scanner         harborScanner  `json:"scanner"`
	Severity        string         `json:"severity"`
	Vulnerabilities []harborVuln   `json:"vulnerabilities"`
}

// harborScans remembers, per replica, scans that failed and the artifact a
// scan ID was asked for. The ID itself encodes repository@digest, so any
// replica answers a poll from the shared verdict store.
type harborScans struct {
	mu     sync.Mutex
	failed map[string]string
	arts   map[string]harborArtifact
}

const harborMaxRemembered = 10000

func newHarborScans(*Server) *harborScans {
	return &harborScans{failed: map[string]string{}, arts: map[string]harborArtifact{}}
}

func (h *harborScans) remember(id string, a harborArtifact) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.arts) >= harborMaxRemembered {
		clear(h.arts)
		clear(h.failed)
	}
	h.arts[id] = a
	delete(h.failed, id)
}

func (h *harborScans) fail(id, msg string) {
	h.mu.Lock()
	h.failed[id] = msg
	h.mu.Unlock()
}

func (h *harborScans) state(id string) (harborArtifact, string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.arts[id]
	return a, h.failed[id], ok
}

func harborError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", HarborErrorMIME)
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": fmt.Sprintf(format, args...)}})
}

// harborAuthorized checks Harbor's credentials. Without a token the
// adapter is not served: an open adapter scans whatever registry a caller
// names.
func (s *Server) harborAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if s.harborToken == "" {
		harborError(w, http.StatusForbidden, "the Harbor adapter is disabled: set serve.harbor.token (or token-file, token-env) and register the scanner in Harbor with it")
		return false
	}
	if authorized(r, s.harborToken) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="mlwarden"`)
	harborError(w, http.StatusUnauthorized, "unauthorized")
	return false
}

func (s *Server) serveHarborMetadata(w http.ResponseWriter, r *http.Request) {
	if !s.harborAuthorized(w, r) {
		return
	}
	md := map[string]any{
		"scanner": harborScanner{Name: "mlwarden", Vendor: "mlwarden", Version: s.version},
		"capabilities": []map[string]any{{
			"type": "vulnerability",
			"consumes_mime_types": []string{
				"application/vnd.oci.image.manifest.v1+json",
				"application/vnd.docker.distribution.manifest.v2+json",
			},
			"produces_mime_types": []string{HarborVulnReportMIME, HarborVulnReport10MIME, HarborRawReportMIME, MlwardenVerdictMIME},
		}},
		"properties": map[string]string{
			"harbor.scanner-adapter/scanner-type": "ml-supply-chain",
			"org.mlwarden/rules-version":          s.rulesVersion,
		},
	}
	w.Header().Set("Content-Type", HarborMetadataMIME)
	json.NewEncoder(w).Encode(md)
}

// harborAuth turns the Authorization value Harbor sends into credentials
// for pulling the artifact.
func harborAuth(v string) authn.Authenticator {
	scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
	switch strings.ToLower(scheme) {
	case "basic":
		return authn.FromConfig(authn.AuthConfig{Auth: cred})
	case "bearer":
		return authn.FromConfig(authn.AuthConfig{RegistryToken: cred})
	}
	return authn.Anonymous
}

// harborRef builds repository@digest on the registry Harbor names, which
// the guard must allow; it reports whether the registry is reached over
// plain HTTP.
func (s *Server) harborRef(req harborScanRequest) (name.Digest, bool, error) {
	u, err := url.Parse(req.Registry.URL)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return name.Digest{}, false, errors.New("registry.url is not an http:// or https:// URL")
	}
	if req.Artifact.Repository == "" || req.Artifact.Digest == "" {
		return name.Digest{}, false, errors.New("artifact.repository and artifact.digest are required")
	}
	insecure := u.Scheme == "http"
	d, err := s.requestRef(u.Host+"/"+req.Artifact.Repository+"@"+req.Artifact.Digest, insecure)
	return d, insecure, err
}

// requestRef parses a digest reference a request (Harbor, an event) names
// and checks its registry with the guard. Plain HTTP is for the
// registries the operator named (allow_registries, --insecure-registry)
// only: a caller's http:// must not turn TLS off for any host.
func (s *Server) requestRef(ref string, insecure bool) (name.Digest, error) {
	opts := append([]name.Option{name.StrictValidation}, s.nameOpts...)
	d, err := name.NewDigest(ref, opts...)
	if err != nil {
		return name.Digest{}, err
	}
	reg := d.Context().RegistryStr()
	if err := s.guard.CheckRegistry(reg); err != nil {
		s.log.Warn("registry refused", "image", ref, "err", err)
		return name.Digest{}, errors.New(RegistryMessage(reg, err))
	}
	if !insecure {
		return d, nil
	}
	host, port := reg, ""
	if h, p, err := net.SplitHostPort(reg); err == nil {
		host, port = h, p
	}
	if !slices.Contains(s.insecure, reg) && !s.guard.Allowed(host, port) {
		return name.Digest{}, fmt.Errorf("plain HTTP to registry %s refused: only registries in serve.allow_registries or --insecure-registry are reached over http://", reg)
	}
	return name.NewDigest(ref, append(opts, name.Insecure)...)
}

// harborID encodes the reference into the scan ID, so that every replica
// can answer for it; harborRefOf decodes it.
func harborID(d name.Digest, insecure bool) string {
	s := d.String()
	if insecure {
		s = "http://" + s
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func (s *Server) harborRefOf(id string) (name.Digest, error) {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return name.Digest{}, fmt.Errorf("unknown scan id")
	}
	ref, insecure := strings.CutPrefix(string(b), "http://")
	return s.requestRef(ref, insecure)
}

func (s *Server) serveHarborScan(w http.ResponseWriter, r *http.Request) {
	if !s.harborAuthorized(w, r) {
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != HarborScanRequestMIME && mt != "application/json" {
			harborError(w, http.StatusUnsupportedMediaType, "unsupported content type %q", ct)
			return
		}
	}
	var req harborScanRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		harborError(w, http.StatusBadRequest, "decode scan request: %v", err)
		return
	}
	ref, insecure, err := s.harborRef(req)
	if err != nil {
		harborError(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	id := harborID(ref, insecure)
	s.harbor.remember(id, req.Artifact)
	if _, err := s.store.Get(r.Context(), ref, s.rulesVersion); err != nil {
		if s.scanner == nil {
			harborError(w, http.StatusNotImplemented, "no image scanner configured")
			return
		}
		j, err := s.scans.enqueue(ref, harborAuth(req.Registry.Authorization), "harbor")
		if err != nil {
			harborError(w, http.StatusServiceUnavailable, "%v; try again later", err)
			return
		}
		go s.harborWatch(id, j)
	}
	w.Header().Set("Content-Type", HarborScanResponseMIME)
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]string{"id": id})
}

// harborWatch records a failed scan so that the report poll ends with 500.
// What Harbor is told says where the details are, never what the registry
// sent (the coordinator logs the error).
func (s *Server) harborWatch(id string, j *scanJob) {
	<-j.done
	if j.err != nil {
		s.harbor.fail(id, scanFailure(j.ref.Context().RegistryStr(), j.err))
	}
}

func (s *Server) serveHarborReport(w http.ResponseWriter, r *http.Request) {
	if !s.harborAuthorized(w, r) {
		return
	}
	id := r.PathValue("id")
	ref, err := s.harborRefOf(id)
	if err != nil {
		harborError(w, http.StatusNotFound, "unknown scan id: %v", err)
		return
	}
	mt := HarborVulnReportMIME
	if acc := r.Header.Get("Accept"); acc != "" && acc != "*/*" {
		mt = ""
		for _, want := range []string{HarborVulnReportMIME, HarborVulnReport10MIME, HarborRawReportMIME, MlwardenVerdictMIME} {
			if mediaMatch(acc, want) {
				mt = want
				break
			}
		}
		if mt == "" {
			harborError(w, http.StatusNotImplemented, "cannot produce %q", acc)
			return
		}
	}
	art, failed, _ := s.harbor.state(id)
	v, err := s.store.Get(r.Context(), ref, s.rulesVersion)
	if err != nil {
		switch {
		case failed != "":
			harborError(w, http.StatusInternalServerError, "scan failed: %s", failed)
		case errors.Is(err, verdict.ErrNotFound):
			// Running here or on another replica that writes the shared store.
			w.Header().Set("Refresh-After", fmt.Sprint(harborRefreshAfter))
			w.WriteHeader(http.StatusFound)
		default:
			s.log.Warn("read verdict", "image", ref.String(), "err", err)
			harborError(w, http.StatusInternalServerError, "the verdict could not be read (details in the mlwarden log)")
		}
		return
	}
	if art.Digest == "" {
		art = harborArtifact{Repository: ref.Context().RepositoryStr(), Digest: ref.DigestStr()}
	}
	w.Header().Set("Content-Type", mt)
	if mt == HarborRawReportMIME || mt == MlwardenVerdictMIME {
		json.NewEncoder(w).Encode(publicVerdict(v))
		return
	}
	json.NewEncoder(w).Encode(s.harborReportOf(v, art))
}

// publicVerdict is v with the errors of the whole image (which may hold
// what the registry sent) said as publicScanError says them.
func publicVerdict(v *verdict.Verdict) *verdict.Verdict {
	if len(v.Errors) == 0 {
		return v
	}
	c := *v
	c.Errors = make([]scanners.Error, len(v.Errors))
	for i, e := range v.Errors {
		if e.Path == "" {
			e.Message = publicScanError(e)
		}
		c.Errors[i] = e
	}
	return &c
}

// mediaMatch reports whether an Accept header lists want (parameters
// compared too, spaces ignored).
func mediaMatch(accept, want string) bool {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), " ", "") }
	for part := range strings.SplitSeq(accept, ",") {
		p := norm(part)
		if i := strings.Index(p, ";q="); i >= 0 {
			p = p[:i]
		}
		if p == norm(want) {
			return true
		}
	}
	return false
}

var harborSeverity = map[scanners.Severity]string{
	scanners.SeverityCritical: "Critical",
	scanners.SeverityHigh:     "High",
	scanners.SeverityMedium:   "Medium",
	scanners.SeverityLow:      "Low",
	scanners.SeverityInfo:     "Negligible",
}

// harborReportOf maps a verdict to Harbor's vulnerability report: the rule
// ID is the vulnerability ID, the path (or the layer) the package.
func (s *Server) harborReportOf(v *verdict.Verdict, art harborArtifact) harborReport {
	rep := harborReport{
		GeneratedAt: v.ScannedAt,
		Artifact:    art,
		Scanner:     harborScanner{Name: "mlwarden", Vendor: "mlwarden", Version: s.version},
		Severity:    "Unknown",
	}
	worst := scanners.Severity(-1)
	for _, f := range v.Findings {
		pkg, ver := f.Path, shortDigest(f.Layer)
		if pkg == "" {
			pkg, ver = shortDigest(f.Layer), ""
		}
		if pkg == "" {
			pkg = f.Target
		}
		attrs := map[string]any{"check": f.Check, "fingerprint": f.Fingerprint}
		for k, val := range map[string]string{"layer": f.Layer, "evidence": f.Evidence, "commit": f.Commit} {
			if val != "" {
				attrs[k] = val
			}
		}
		if f.Line > 0 {
			attrs["line"] = f.Line
		}
		rep.Vulnerabilities = append(rep.Vulnerabilities, harborVuln{
			ID: f.RuleID, Package: pkg, Version: ver, Severity: harborSeverity[f.Severity],
			Description: f.Message, VendorAttributes: attrs,
		})
		worst = max(worst, f.Severity)
	}
	for _, e := range v.Errors {
		rep.Vulnerabilities = append(rep.Vulnerabilities, harborVuln{
			ID: "mlwarden/scan-error", Package: e.Path, Severity: "Unknown",
			Description: "not scanned in full: " + publicScanError(e),
		})
	}
	if worst >= 0 {
		rep.Severity = harborSeverity[worst]
	}
	if rep.Vulnerabilities == nil {
		rep.Vulnerabilities = []harborVuln{}
	}
	return rep
}
