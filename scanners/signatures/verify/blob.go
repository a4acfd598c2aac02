package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/mlwarden/mlwarden/scanners/signatures/blobsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// BlobOptions says which signature of a file to verify, and against what.
type BlobOptions struct {
	Trust TrustFiles
	// Bundle is a Sigstore bundle (--bundle); default FILE.sigstore.json
	// or FILE.bundle when present.
	Bundle string
	// Signature is a detached base64 signature (--signature); default
	// FILE.sig when there is no bundle.
	Signature string
	// Certificate is the signing certificate of a detached signature, PEM
	// (--certificate); default FILE.pem when present.
	Certificate string
}

// Blob verifies file against what cosign sign-blob writes beside it: a
// Sigstore bundle or a detached signature, with a public key or keyless.
func Blob(ctx context.Context, file string, o BlobOptions) (*Report, error) {
	t, err := o.Trust.CosignTrust()
	if err != nil {
		return nil, err
	}
	rep := &Report{Command: "blob", Target: file}
	return finish(rep, blobInto(ctx, rep, file, t, o))
}

func blobInto(ctx context.Context, rep *Report, file string, t blobsig.Trust, o BlobOptions) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.CopyBuffer(h, ctxReader{ctx, f}, make([]byte, 1<<20))
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	digest := h.Sum(nil)
	rep.Digest = "sha256:" + hex.EncodeToString(digest)
	bundlePath, sigPath, certPath := o.Bundle, o.Signature, o.Certificate
	if bundlePath == "" && sigPath == "" {
		switch {
		case exists(file + ".sigstore.json"):
			bundlePath = file + ".sigstore.json"
		case exists(file + ".bundle"):
			bundlePath = file + ".bundle"
		case exists(file + ".sig"):
			sigPath = file + ".sig"
		default:
			return fmt.Errorf("%w: no %s.sigstore.json or %s.sig; give --bundle or --signature", trust.ErrUnsigned, file, file)
		}
	}
	var res *blobsig.Result
	if bundlePath != "" {
		data, err := readFile(bundlePath, 16<<20)
		if err != nil {
			return err
		}
		if res, err = blobsig.VerifyBundle(data, digest, t); err != nil {
			return err
		}
	} else {
		sig, err := readFile(sigPath, 1<<20)
		if err != nil {
			return err
		}
		if certPath == "" && exists(file+".pem") {
			certPath = file + ".pem"
		}
		var cert []byte
		if certPath != "" {
			if cert, err = readFile(certPath, 1<<20); err != nil {
				return err
			}
		}
		if res, err = blobsig.VerifyDetached(sig, cert, digest, t); err != nil {
			return err
		}
	}
	rep.Signer = res.Signer
	return nil
}
