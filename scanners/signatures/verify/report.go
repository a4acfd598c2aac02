// Package verify checks one artifact and says whether it is what its
// publisher signed: files against checksum manifests (Checksums), a model
// against its OpenSSF model signature (Model), a file against what cosign
// sign-blob wrote beside it (Blob) and an image against its cosign
// signatures (Image). It is the library behind `mlwarden verify`.
//
// Trust comes from files only (TrustFiles): public keys, certificate
// chains, a Sigstore trusted_root.json. Nothing is fetched from TUF or a
// transparency log, so verification works offline; only Image contacts the
// registry that holds the image. Messages name the options by the flags of
// `mlwarden verify`, which are cosign's and model_signing's, since those
// are what a user changes.
//
// Each function returns a Report and an error:
//
//   - a nil error: the Report's Status is StatusVerified or StatusFailed
//     (a file differs, a signature does not verify or was made by someone
//     the trust does not name, or there is no signature);
//   - a non-nil error with a Report: nothing could be decided (a file could
//     not be read, the registry could not be asked); the Report's Status is
//     StatusError and its Error is err's message;
//   - a non-nil error without a Report: the options are unusable (trust
//     files unreadable, half a keyless identity, not exactly one kind of
//     trust), so nothing was checked.
package verify

import (
	"errors"

	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// Report is the outcome of verifying one artifact. Its JSON form is what
// `mlwarden verify --format json` prints.
type Report struct {
	// Command is the kind of verification: checksums, model, blob, image.
	Command string `json:"command"`
	// Target is the artifact as given: a path or an image reference.
	Target string `json:"target"`
	// Status is StatusVerified, StatusFailed or StatusError.
	Status   string `json:"status"`
	Verified bool   `json:"verified"`
	// Signer says who signed: "key", a key hint, a certificate subject or
	// a keyless identity.
	Signer string `json:"signer,omitempty"`
	// Method is a model signature's method (key, certificate, sigstore).
	Method string `json:"method,omitempty"`
	// Digest is the digest verified: a file's (sha256:HEX) or an image's.
	Digest string `json:"digest,omitempty"`
	// Format is an image signature's format (legacy, bundle).
	Format string `json:"format,omitempty"`
	// Checked counts the files (or signatures) checked.
	Checked  int       `json:"checked,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
	// Error says why verification failed or could not decide.
	Error string `json:"error,omitempty"`
}

// Problem is one file that did not verify.
type Problem struct {
	Path string `json:"path"`
	// Status is FAILED, MISSING, REJECTED, ERROR (as sha256sum -c names
	// them), EXTRA (not covered by a model signature), MALFORMED (a
	// manifest line) or UNLISTED (in no manifest).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Report statuses.
const (
	StatusVerified = "verified"
	StatusFailed   = "failed"
	StatusError    = "error"
)

// finish sets rep's status from err, the outcome of checking. A signature
// at fault (trust.ErrInvalid, ErrIdentity, ErrUnsigned) is a verdict, not
// an error: it fails the report and finish returns nil. Any other err means
// nothing could be decided and is returned.
func finish(rep *Report, err error) (*Report, error) {
	switch {
	case err != nil && (errors.Is(err, trust.ErrInvalid) || errors.Is(err, trust.ErrIdentity) || errors.Is(err, trust.ErrUnsigned)):
		rep.Status, rep.Error = StatusFailed, err.Error()
		return rep, nil
	case err != nil:
		rep.Status, rep.Error = StatusError, err.Error()
		return rep, err
	case len(rep.Problems) > 0:
		rep.Status = StatusFailed
	default:
		rep.Status, rep.Verified = StatusVerified, true
	}
	return rep, nil
}
