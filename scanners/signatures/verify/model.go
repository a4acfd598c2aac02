package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// ModelOptions says how to verify a model against its signature.
type ModelOptions struct {
	Trust TrustFiles
	// Signature is the signature file (--signature); default
	// TARGET/model.sig. A single-file model needs one.
	Signature string
	// IgnorePaths are paths relative to the model to ignore, in addition
	// to those the signature lists (--ignore-paths).
	IgnorePaths []string
	// IgnoreUnsignedFiles checks only the files the signature names.
	IgnoreUnsignedFiles bool
	// KeepGitPaths compares .git, .gitattributes, .github and .gitignore
	// too (model_signing ignores them by default).
	KeepGitPaths bool
}

// Model verifies a model directory (or file) against its OpenSSF model
// signature (model_signing's model.sig, v0.2 to v1.1): key, certificate
// and Sigstore keyless methods, files and shards serializations. Every
// file must match its signed digest; modified, missing, unsigned (EXTRA)
// and unsafe (REJECTED) files are problems, by name.
func Model(ctx context.Context, target string, o ModelOptions) (*Report, error) {
	t, err := o.Trust.ModelTrust()
	if err != nil {
		return nil, err
	}
	rep := &Report{Command: "model", Target: target}
	return finish(rep, modelInto(ctx, rep, target, t, o))
}

func modelInto(ctx context.Context, rep *Report, target string, t modelsig.Trust, o ModelOptions) error {
	fi, err := os.Stat(target)
	if err != nil {
		return err
	}
	sigPath := o.Signature
	rootDir, model := target, "."
	if !fi.IsDir() {
		rootDir, model = filepath.Dir(target), filepath.Base(target)
		if sigPath == "" {
			return errors.New("a single-file model needs --signature FILE")
		}
	}
	if sigPath == "" {
		sigPath = filepath.Join(target, modelsig.DefaultSignatureName)
	}
	mo := modelsig.Options{IgnorePaths: o.IgnorePaths, IgnoreUnsignedFiles: o.IgnoreUnsignedFiles, KeepGitPaths: o.KeepGitPaths}
	// A signature inside the model is not part of it.
	if rel, err := filepath.Rel(rootDir, sigPath); err == nil && fi.IsDir() && !strings.HasPrefix(rel, "..") {
		mo.SignatureName = filepath.ToSlash(rel)
	} else {
		mo.SignatureName = modelsig.DefaultSignatureName
	}
	data, err := readFile(sigPath, maxManifest)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s not found (give --signature)", trust.ErrUnsigned, sigPath)
		}
		return err
	}
	r, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := modelsig.Verify(ctx, checksums.NewHasher(r.FS()), model, data, t, mo)
	if err != nil {
		return err
	}
	rep.Method, rep.Signer, rep.Checked = string(res.Method), res.Signer, res.Files
	add := func(status string, names []string, reason string) {
		for _, n := range names {
			rep.Problems = append(rep.Problems, Problem{Path: n, Status: status, Reason: reason})
		}
	}
	add("FAILED", res.Modified, "digest differs from the signed one")
	add("MISSING", res.Missing, "signed but not present")
	add("EXTRA", res.Extra, "present but not covered by the signature")
	add("REJECTED", res.Unsafe, "")
	return nil
}
