// Package signatures is the signatures check: checksum manifests
// (SHA256SUMS, *.sha256), git-LFS pointers left where weights should be,
// OpenSSF model signatures (model.sig), what cosign sign-blob writes beside a
// file (FILE.sigstore.json, FILE.sig + FILE.pem) and cosign image
// signatures, all verified offline with trust taken from files (see Policy).
//
// A scanner sees one artifact at a time, but manifests and model.sig
// describe other files of the target. When the target is a directory (or a
// file), the check reads a manifest, model.sig or blob signature when it
// sees it and verifies it when the whole target has been walked
// (FinishTarget), so that every file is read once per run:
//
//   - a small file (up to scanners.SmallFile) is read whole by the
//     dispatcher once for all checks; this check takes its sha256 from
//     that same copy while the walk goes on;
//   - a larger file (weights) is handed to the other checks in place and
//     read by them only where they parse it (a zip directory, a pickle);
//     this check streams it once, in parallel with other files, when a
//     manifest or signature names it.
//
// Other files of the target are read through the target's file system the
// source hands over as Artifact.FS (an os.Root on the directory, or on a
// file target's directory), never by reopening Artifact.Target, which is
// only the name the report shows. Names with "..", absolute names and
// symlinks that leave the target are findings and are never read. Each file
// is hashed at most once per algorithm and run, however many manifests name
// it (SHA256SUMS, a sidecar and model.sig share one memo per file system).
// Inside images and git history, which have no FS, and in a repository's
// working tree, manifests are not followed and are reported as unverified.
package signatures
