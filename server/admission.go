//go:build !mlwarden_sbatch

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/server/verdict"
)

// maxReviewBytes bounds an AdmissionReview body: the API server caps objects
// at 1.5 MiB, and the review carries the object and possibly the old one.
const maxReviewBytes = 4 << 20

// maxWarnings and maxWarningLen bound the warnings, as kubectl shows each on
// one line.
const (
	maxWarnings   = 10
	maxWarningLen = 120
)

// maxDenials and maxDenialLen bound the denial message the same way (a
// review with 45,000 images once gave an 11.5 MB message), and
// maxImageLookups the images of one review checked at once (each may ask
// a registry: without a bound, one review opened a connection per image).
const (
	maxDenials      = 10
	maxDenialLen    = 400
	maxImageLookups = 8
)

func (s *Server) serveAdmission(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxReviewBytes {
		http.Error(w, "admission review too large", http.StatusRequestEntityTooLarge)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, "decode AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(w, "AdmissionReview has no request", http.StatusBadRequest)
		return
	}
	resp := s.Review(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: resp,
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&out); err != nil {
		s.log.Warn("write admission response", "err", err)
	}
	outcome := "allowed"
	if !resp.Allowed {
		outcome = "denied"
	}
	s.metrics.verdictLat.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
	s.log.Info("admission", "uid", string(review.Request.UID), "kind", review.Request.Kind.Kind,
		"namespace", review.Request.Namespace, "name", review.Request.Name,
		"operation", string(review.Request.Operation), "allowed", resp.Allowed,
		"dry_run", review.Request.DryRun != nil && *review.Request.DryRun,
		"ms", float64(time.Since(start).Microseconds())/1000)
}

// answer collects what the checks of one review say.
type answer struct {
	mu       sync.Mutex
	denials  []string
	warnings []string
}

func (a *answer) deny(format string, args ...any) {
	a.mu.Lock()
	a.denials = append(a.denials, fmt.Sprintf(format, args...))
	a.mu.Unlock()
}

func (a *answer) warn(format string, args ...any) {
	a.mu.Lock()
	a.warnings = append(a.warnings, fmt.Sprintf(format, args...))
	a.mu.Unlock()
}

// act denies or warns by action; allow says nothing.
func (a *answer) act(act Action, format string, args ...any) {
	switch act {
	case Deny:
		a.deny(format, args...)
	case Warn:
		a.warn(format, args...)
	}
}

// Review answers one admission request. It is the webhook without HTTP.
func (s *Server) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return allow
	}
	spec, err := podSpecOf(req.Kind.Kind, req.Object.Raw)
	if err != nil {
		return denied(req, []string{fmt.Sprintf("mlwarden cannot read the %s: %v", req.Kind.Kind, err)}, nil)
	}
	if spec == nil {
		return allow // not a workload: nothing to check
	}
	rules := s.admit.Load()
	pol := rules.cfg.policyFor(req.Namespace)
	failOn := pol.failOn()
	dryRun := req.DryRun != nil && *req.DryRun
	var a answer

	for _, p := range misconfigOf(spec) {
		switch {
		case p.rule.Severity >= failOn:
			a.deny("%s: %s", p.rule.ID, p.msg)
		case pol.Misconfig == Warn:
			a.warn("%s: %s", p.rule.ID, p.msg)
		}
	}
	checkIsolation(&a, pol, spec)

	images := imagesOf(spec)
	if maxImages := s.maxImages(); len(images) > maxImages {
		// Judged by nothing else: no registry is asked for any of them.
		a.deny("the %s names %d distinct images, more than the %d one review may have checked (serve.max-images); split it, or raise the bound",
			req.Kind.Kind, len(images), maxImages)
		return denied(req, a.denials, a.warnings)
	}

	// Leave the API server time to read the answer before its timeout.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ScanDeadline)
	defer cancel()
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxImageLookups)
	for _, img := range images {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				a.act(pol.Fallback, "%s: image %s was not checked within %s", img.who(), img.image, s.cfg.ScanDeadline)
				return
			}
			defer func() { <-slots }()
			s.checkImage(ctx, &a, pol, rules.sigs, img, dryRun)
		}()
	}
	wg.Wait()
	if len(a.denials) > 0 {
		return denied(req, a.denials, a.warnings)
	}
	allow.Warnings = shortWarnings(a.warnings)
	return allow
}

func denied(req *admissionv1.AdmissionRequest, denials, warnings []string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		UID:     req.UID,
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusForbidden,
			Reason:  metav1.StatusReasonForbidden,
			Message: "denied by mlwarden: " + strings.Join(shortDenials(denials), "; "),
		},
		Warnings: shortWarnings(warnings),
	}
}

// maxImages is the bound on a review's distinct images.
func (s *Server) maxImages() int {
	if s.cfg.MaxImages > 0 {
		return s.cfg.MaxImages
	}
	return DefaultMaxImages
}

// shortDenials bounds the denials' number and length, as shortWarnings
// does the warnings': the first maxDenials-1, then how many more.
func shortDenials(ds []string) []string {
	out := make([]string, 0, min(len(ds), maxDenials))
	for i, d := range ds {
		if i == maxDenials-1 && len(ds) > maxDenials {
			out = append(out, fmt.Sprintf("and %d more", len(ds)-i))
			break
		}
		out = append(out, truncate(d, maxDenialLen))
	}
	return out
}

// shortWarnings bounds the warnings' number and length.
func shortWarnings(ws []string) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, 0, min(len(ws), maxWarnings))
	for i, w := range ws {
		if i == maxWarnings-1 && len(ws) > maxWarnings {
			out = append(out, fmt.Sprintf("mlwarden: %d more warnings", len(ws)-i))
			break
		}
		out = append(out, truncate(w, maxWarningLen))
	}
	return out
}

// truncate cuts s to at most n runes, ending with an ellipsis when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// shortDigest shows a digest's algorithm and first 12 hex digits.
func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

// checkImage applies the image policies to one image of the pod.
func (s *Server) checkImage(ctx context.Context, a *answer, pol Policy, sigs SignatureVerifier, img podImage, dryRun bool) {
	who := img.who()
	ref, err := s.parseRef(img.image)
	if err != nil {
		a.deny("%s: image %q is not a valid reference: %v", who, img.image, err)
		return
	}
	reg := ref.Context().RegistryStr()
	if err := s.guard.CheckRegistry(reg); err != nil {
		// Refused before anything is asked: never a registry to contact,
		// so not a fallback either.
		s.log.Warn("registry refused", "image", img.image, "err", err)
		a.deny("%s: image %s: %s", who, img.image, RegistryMessage(reg, err))
		return
	}
	d, pinned := ref.(name.Digest)
	if !pinned {
		a.act(pol.Digest, "%s: image %s is not pinned by digest; use %s@sha256:…", who, img.image, ref.Context().Name())
		d, err = s.resolve(ctx, ref)
		if err != nil {
			s.log.Warn("resolve tag", "image", img.image, "err", err)
			var re *RefusedError
			if errors.As(err, &re) {
				a.deny("%s: image %s: %s", who, img.image, RegistryMessage(reg, err))
				return
			}
			a.act(pol.Fallback, "%s: cannot resolve %s to a digest, so it is not checked: %s", who, img.image, RegistryMessage(reg, err))
			return
		}
	}
	short := d.Context().Name() + "@" + shortDigest(d.DigestStr())

	if sigs != nil && pol.Signatures != Allow {
		if err := sigs.VerifyImage(ctx, d); err != nil {
			msg := err.Error()
			if isNetworkError(err) {
				s.log.Warn("signature check", "image", d.String(), "err", err)
				msg = RegistryMessage(reg, err)
			}
			a.act(pol.Signatures, "%s: image %s fails the signature policy: %s", who, short, msg)
		}
	}

	v, err := s.store.Get(ctx, d, s.rulesVersion)
	switch {
	case err == nil:
		s.metrics.cacheHits.WithLabelValues("hit").Inc()
		s.judge(a, pol, who, short, v)
		return
	case !errors.Is(err, verdict.ErrNotFound):
		s.log.Warn("read verdict", "image", d.String(), "err", err)
	}
	s.metrics.cacheHits.WithLabelValues("miss").Inc()

	switch {
	case dryRun:
		// Nothing runs on a dry run, and a real request would be scanned:
		// say so, whatever the fallback (server-side diffs of GitOps tools
		// are dry runs).
		a.warn("%s: no mlwarden verdict for %s yet (dry run: not scanned)", who, short)
	case pol.NoVerdict == Deny || pol.NoVerdict == Warn:
		_, qerr := s.scans.enqueue(d, nil, "admission")
		hint := "a scan is queued; try again in a minute"
		if qerr != nil {
			hint = "the scan queue is full; try again later"
		}
		a.act(pol.NoVerdict, "%s: no mlwarden verdict for %s yet: %s", who, short, hint)
	case s.scanner == nil:
		a.act(pol.Fallback, "%s: no mlwarden verdict for %s and no scanner configured", who, short)
	default:
		j := s.scans.now(d, nil, "admission")
		select {
		case <-j.done:
			var off errHandedOff
			switch {
			case errors.As(j.err, &off):
				a.act(pol.Fallback, "%s: scan of %s did not finish within %s (%v); try again later", who, short, s.cfg.ScanDeadline, off.why)
				return
			case j.err != nil:
				// The scan's errors are text by now, and may hold what the
				// registry sent: the log has them (coordinator.run).
				a.act(pol.Fallback, "%s: scan of %s failed: %s", who, short, scanFailure(reg, j.err))
				return
			}
			s.judge(a, pol, who, short, j.v)
		case <-ctx.Done():
			a.act(pol.Fallback, "%s: scan of %s did not finish within %s; it goes on, try again later",
				who, short, s.cfg.ScanDeadline)
		}
	}
}

// judge applies fail-on to a verdict.
func (s *Server) judge(a *answer, pol Policy, who, short string, v *verdict.Verdict) {
	failOn := pol.failOn()
	if v.Failed(failOn) {
		n := 0
		for _, sev := range scanners.Severities() {
			if sev >= failOn {
				n += v.Summary.Count(sev)
			}
		}
		msg := fmt.Sprintf("%s: image %s has %d finding(s) at or above %s", who, short, n, failOn)
		if f := v.Worst(failOn); f != nil {
			msg += fmt.Sprintf(", e.g. %s %s", f.RuleID, findingPlace(f)) + ": " + f.Message
		}
		a.deny("%s", msg)
		return
	}
	if len(v.Errors) > 0 {
		a.act(pol.Fallback, "%s: the scan of %s is incomplete (%d error(s), e.g. %s)", who, short, len(v.Errors), publicScanError(v.Errors[0]))
		return
	}
	below := 0
	for _, sev := range scanners.Severities() {
		if sev < failOn {
			below += v.Summary.Count(sev)
		}
	}
	if below > 0 && pol.Misconfig != Allow {
		a.warn("%s: image %s has %d finding(s) below %s; run mlwarden scan on it", who, short, below, failOn)
	}
}

// who names the containers that run an image.
func (img podImage) who() string {
	if len(img.containers) > 1 {
		return fmt.Sprintf("containers %q", img.containers)
	}
	return fmt.Sprintf("container %q", img.containers[0])
}

// isNetworkError reports whether err came from reaching a registry (and so
// may hold what it sent, or tell one kind of port from another).
func isNetworkError(err error) bool {
	var (
		re *RefusedError
		te *transport.Error
		ne net.Error
		ue *url.Error
	)
	return errors.As(err, &re) || errors.As(err, &te) || errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// scanFailure is what a requester is told about a failed scan of an image
// on reg: a refusal of the guard, or one line that says where the details
// are.
func scanFailure(reg string, err error) string {
	var re *RefusedError
	if errors.As(err, &re) {
		return RegistryMessage(reg, err)
	}
	var off errHandedOff
	if errors.As(err, &off) || errors.Is(err, context.DeadlineExceeded) {
		return "it did not finish in time; try again later"
	}
	return fmt.Sprintf("the registry %s could not be reached, refused the request or is not allowed, or the image could not be read (details in the mlwarden log)", reg)
}

// publicScanError is a verdict's error as a requester sees it: the path of
// a file that could not be scanned, with what the check said; an error of
// the whole image (a layer or manifest that could not be read) holds what
// the registry sent, so it says only that.
func publicScanError(e scanners.Error) string {
	if e.Path == "" {
		return "a layer or the manifest could not be read in full (details in the mlwarden log)"
	}
	return e.Path + ": " + e.Message
}

func findingPlace(f *scanners.Finding) string {
	p := f.Path
	if f.Line > 0 {
		p += fmt.Sprintf(":%d", f.Line)
	}
	if f.Layer != "" {
		p += " (layer " + shortDigest(f.Layer) + ")"
	}
	if p == "" {
		return ""
	}
	return "in " + p
}
