package signatures

import (
	"github.com/mlwarden/mlwarden/scanners"
)

const chk = scanners.CheckSignatures

// The check's rules.
var (
	RuleUnsigned = scanners.Rule{ID: "signatures/unsigned", Check: chk, Severity: scanners.SeverityHigh,
		Title: "Artifact is not signed",
		Why:   "Without a signature nothing shows that the image or model is the one its publisher built; a swapped or poisoned artifact runs unnoticed.",
		Fix:   "Sign it (cosign sign, model_signing sign) and verify with mlwarden verify; severity is high where the policy requires a signature, info elsewhere."}
	RuleInvalid = scanners.Rule{ID: "signatures/invalid", Check: chk, Severity: scanners.SeverityCritical,
		Title: "Signature does not verify",
		Why:   "A signature that does not verify means the artifact or its signature was altered, or the signature was copied from another artifact.",
		Fix:   "Do not use the artifact; fetch it again from the publisher and re-verify, or re-sign it if you are the publisher."}
	RuleIdentity = scanners.Rule{ID: "signatures/identity-mismatch", Check: chk, Severity: scanners.SeverityCritical,
		Title: "Signed by an untrusted key or identity",
		Why:   "A valid signature by someone the policy does not trust proves nothing about provenance: anyone can sign.",
		Fix:   "Check who signed it; if the signer is legitimate add its key or identity to the policy, otherwise do not use the artifact."}
	RuleChecksum = scanners.Rule{ID: "signatures/checksum-mismatch", Check: chk, Severity: scanners.SeverityCritical,
		Title: "File differs from its signed or published digest",
		Why:   "The file's content is not what the manifest or signature says: corrupted, truncated or tampered with.",
		Fix:   "Download the file again and verify it; never load weights whose digest does not match."}
	RuleNotSigned = scanners.Rule{ID: "signatures/file-not-signed", Check: chk, Severity: scanners.SeverityHigh,
		Title: "File in a signed model is not covered by the signature",
		Why:   "A file added next to signed weights (a pickle, a config, custom code) is loaded with them but nobody vouched for it.",
		Fix:   "Remove the file, or re-sign the model with it; use ignorePaths only for files that are never loaded."}
	RuleMissing = scanners.Rule{ID: "signatures/file-missing", Check: chk, Severity: scanners.SeverityMedium,
		Title: "Signed or listed file is missing",
		Why:   "The model or release is incomplete: a file the signature or manifest lists is not there.",
		Fix:   "Fetch the missing file from the publisher and verify again."}
	RuleLFSPointer = scanners.Rule{ID: "signatures/lfs-pointer-only", Check: chk, Severity: scanners.SeverityMedium,
		Title: "git-LFS pointer where the file should be",
		Why:   "The content was never fetched: a loader reads a 130-byte text file instead of weights, fails, or falls back to another source.",
		Fix:   "Run git lfs pull (or download the file) and check it against the pointer's sha256 oid and size."}
	RuleUnsafePath = scanners.Rule{ID: "signatures/unsafe-path", Check: chk, Severity: scanners.SeverityHigh,
		Title: "Manifest names a file outside its directory",
		Why:   "A manifest entry with '..', an absolute path or a symlink out of the directory makes naive verifiers (sha256sum -c) read or vouch for files elsewhere.",
		Fix:   "Regenerate the manifest from inside the directory with relative names; mlwarden never follows such entries."}
	RuleUnverified = scanners.Rule{ID: "signatures/unverified", Check: chk, Severity: scanners.SeverityInfo,
		Title: "Signature or manifest present but not verified",
		Why:   "The artifact carries a signature or manifest that could not be checked here (no trusted key configured, or it lives inside an image or git history).",
		Fix:   "Add the signer's key or identity under signatures: in .mlwarden.yaml, or run mlwarden verify on the extracted files."}
	RuleMalformed = scanners.Rule{ID: "signatures/manifest-malformed", Check: chk, Severity: scanners.SeverityLow,
		Title: "Checksum manifest line could not be read",
		Why:   "A line that does not parse is silently skipped by sha256sum -c; the file it meant is not verified.",
		Fix:   "Regenerate the manifest with sha256sum (or sha256sum --tag)."}
)

// Rules lists the check's rules.
func (s *Scanner) Rules() []scanners.Rule {
	return []scanners.Rule{RuleUnsigned, RuleInvalid, RuleIdentity, RuleChecksum, RuleNotSigned, RuleMissing,
		RuleLFSPointer, RuleUnsafePath, RuleUnverified, RuleMalformed}
}
