package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mlwarden/mlwarden/scanners/signatures/blobsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
	"github.com/mlwarden/mlwarden/scanners/signatures/imagesig"
	"github.com/mlwarden/mlwarden/scanners/signatures/modelsig"
	"github.com/mlwarden/mlwarden/scanners/signatures/trust"
)

// verifyReport is what `mlwarden verify` prints: text for people, JSON
// (--format json) for scripts.
type verifyReport struct {
	Command  string          `json:"command"`
	Target   string          `json:"target"`
	Status   string          `json:"status"` // verified, failed, error
	Verified bool            `json:"verified"`
	Signer   string          `json:"signer,omitempty"`
	Method   string          `json:"method,omitempty"`
	Digest   string          `json:"digest,omitempty"`
	Format   string          `json:"format,omitempty"`
	Checked  int             `json:"checked,omitempty"`
	Problems []verifyProblem `json:"problems,omitempty"`
	Error    string          `json:"error,omitempty"`
}

type verifyProblem struct {
	Path   string `json:"path"`
	Status string `json:"status"` // FAILED, MISSING, EXTRA, REJECTED, ERROR
	Reason string `json:"reason,omitempty"`
}

// trustOptions are the trust flags shared by the subcommands, named as
// cosign's and model_signing's.
type trustOptions struct {
	key, trustedRoot         string
	identity, identityRegexp string
	issuer, issuerRegexp     string
	certChain                []string
	format                   string
}

func (o *trustOptions) registerKeyless(f *pflag.FlagSet, idName, issName string) {
	f.StringVar(&o.trustedRoot, "trusted-root", "", "Sigstore trusted_root.json for keyless verification (never fetched: give the file)")
	f.StringVar(&o.identity, idName, "", "keyless: the signer's identity (certificate SAN: email or URI)")
	f.StringVar(&o.identityRegexp, idName+"-regexp", "", "keyless: a regular expression the signer's identity must match")
	f.StringVar(&o.issuer, issName, "", "keyless: the OIDC issuer of the signer's identity")
	f.StringVar(&o.issuerRegexp, issName+"-regexp", "", "keyless: a regular expression the OIDC issuer must match")
}

// keyless returns the trusted root and the identity, or nil when no
// keyless flag is set. Half a policy is a usage error: an empty identity
// never means anyone.
func (o *trustOptions) keyless() (*root.TrustedRoot, *trust.Identity, error) {
	id := trust.Identity{Subject: o.identity, SubjectRegExp: o.identityRegexp, Issuer: o.issuer, IssuerRegExp: o.issuerRegexp}
	if o.trustedRoot == "" && id == (trust.Identity{}) {
		return nil, nil, nil
	}
	if o.trustedRoot == "" {
		return nil, nil, usageError("keyless verification needs --trusted-root FILE (trusted_root.json); mlwarden never fetches one")
	}
	if err := id.Validate(); err != nil {
		return nil, nil, usageError("keyless verification: %v", err)
	}
	tr, err := trust.LoadTrustedRoot(o.trustedRoot)
	if err != nil {
		return nil, nil, &exitError{code: ExitError, err: err}
	}
	return tr, &id, nil
}

// normalizeVerifyFlags accepts model_signing's spellings (underscores,
// --public_key, --identity_provider, --trust_config) and cosign's --type.
func normalizeVerifyFlags(_ *pflag.FlagSet, n string) pflag.NormalizedName {
	n = strings.ReplaceAll(n, "_", "-")
	switch n {
	case "public-key":
		n = "key"
	case "identity-provider":
		n = "oidc-issuer"
	case "type":
		n = "attestation-type"
	}
	return pflag.NormalizedName(n)
}

func newVerifyCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "verify",
		Short: "Verify signatures and checksums of images, models and files, offline",
		Long: `verify checks one artifact and says whether it is what its publisher signed.
Trust comes from files only (public keys, certificate chains, a Sigstore
trusted_root.json); nothing is fetched from TUF or a transparency log, so it
works in an air-gapped cluster.

Exit codes: 0 verified, 1 verification failed, 2 could not check.`,
	}
	c.AddCommand(newVerifyChecksumsCmd(a), newVerifyModelCmd(a), newVerifyBlobCmd(a), newVerifyImageCmd(a))
	return c
}

// finishVerify prints the report and sets the exit code: 0 verified, 1
// failed, 2 could not check (err not nil).
func finishVerify(a *app, format string, rep *verifyReport, err error) error {
	switch {
	case err != nil && (errors.Is(err, trust.ErrInvalid) || errors.Is(err, trust.ErrIdentity) || errors.Is(err, trust.ErrUnsigned)):
		rep.Status, rep.Error = "failed", err.Error()
		err = nil
	case err != nil:
		rep.Status, rep.Error = "error", err.Error()
	case len(rep.Problems) > 0:
		rep.Status = "failed"
	default:
		rep.Status, rep.Verified = "verified", true
	}
	switch format {
	case "json":
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if e := enc.Encode(rep); e != nil {
			return &exitError{code: ExitError, err: e}
		}
	default:
		for _, p := range rep.Problems {
			fmt.Fprintf(a.stdout, "%s: %s", p.Path, p.Status)
			if p.Reason != "" {
				fmt.Fprintf(a.stdout, " (%s)", p.Reason)
			}
			fmt.Fprintln(a.stdout)
		}
		switch rep.Status {
		case "verified":
			fmt.Fprintf(a.stdout, "Verified OK: %s", rep.Target)
			if rep.Signer != "" {
				fmt.Fprintf(a.stdout, " (signed by %s)", rep.Signer)
			}
			if rep.Checked > 0 {
				fmt.Fprintf(a.stdout, ", %d files checked", rep.Checked)
			}
			fmt.Fprintln(a.stdout)
		case "failed":
			fmt.Fprintf(a.stdout, "Verification FAILED: %s", rep.Target)
			if rep.Error != "" {
				fmt.Fprintf(a.stdout, ": %s", rep.Error)
			} else {
				fmt.Fprintf(a.stdout, ": %d problems", len(rep.Problems))
			}
			fmt.Fprintln(a.stdout)
		}
	}
	if err != nil {
		return &exitError{code: ExitError, err: fmt.Errorf("verify %s %s: could not check: %w", rep.Command, rep.Target, err)}
	}
	if rep.Status == "failed" {
		a.code = ExitFindings
	}
	return nil
}

func checkFormat(f string) error {
	if f != "text" && f != "json" {
		return usageError("--format: unknown format %q (valid: text, json)", f)
	}
	return nil
}

// ---- checksums ----

func newVerifyChecksumsCmd(a *app) *cobra.Command {
	var manifests []string
	var expect, format string
	var strict bool
	c := &cobra.Command{
		Use:   "checksums DIR|FILE",
		Short: "Verify files against SHA256SUMS/SHA512SUMS/*.sha256 manifests or an expected digest",
		Long: `checksums verifies the files of DIR against checksum manifests: GNU (sha256sum,
text and binary modes) and BSD (sha256sum --tag) lines, SHA256SUMS, SHA512SUMS and
*.sha256/*.sha512 sidecars, found in DIR (recursively) or given with --manifest.
Names are resolved inside DIR only: "..", absolute names and symlinks that leave
DIR are rejected, never read. Files are hashed in parallel.`,
		Example: "  mlwarden verify checksums ./llama-3-8b\n  mlwarden verify checksums ./weights --manifest SHA256SUMS\n  mlwarden verify checksums model.gguf --expect-digest sha256:4d7a…",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			rep := &verifyReport{Command: "checksums", Target: args[0]}
			err := runVerifyChecksums(c.Context(), rep, args[0], manifests, expect, strict)
			return finishVerify(a, format, rep, err)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&manifests, "manifest", nil, "checksum manifest to verify DIR against (repeatable; default: manifests found in DIR)")
	f.StringVar(&expect, "expect-digest", "", "the digest FILE must have, as sha256:HEX (or sha512:HEX)")
	f.BoolVar(&strict, "strict", false, "also fail on unreadable manifest lines and on files no manifest lists")
	f.StringVarP(&format, "format", "f", "text", "output format: text, json")
	return c
}

func runVerifyChecksums(ctx context.Context, rep *verifyReport, target string, manifests []string, expect string, strict bool) error {
	fi, err := os.Stat(target)
	if err != nil {
		return err
	}
	rootDir, single := target, ""
	if !fi.IsDir() {
		rootDir, single = filepath.Dir(target), filepath.Base(target)
	}
	r, err := os.OpenRoot(rootDir)
	if err != nil {
		return err
	}
	defer r.Close()
	h := checksums.NewHasher(r.FS())
	if expect != "" {
		algo, hx, err := checksums.ParseDigest(expect)
		if err != nil {
			return usageError("--expect-digest: %v", err)
		}
		if single == "" {
			return usageError("--expect-digest needs a FILE, not a directory")
		}
		res := h.Verify(ctx, ".", []checksums.Entry{{Name: single, Algorithm: algo, Digest: hx}})
		rep.Checked = 1
		rep.Digest = algo + ":" + res[0].Got
		addChecksumProblems(rep, h, res)
		return ctx.Err()
	}
	type manifest struct {
		dir  string // root-relative directory its names are relative to
		name string
		data []byte
	}
	var mans []manifest
	for _, m := range manifests {
		data, err := readBounded(m, 64<<20)
		if err != nil {
			return err
		}
		mans = append(mans, manifest{dir: ".", name: m, data: data})
	}
	if len(manifests) == 0 {
		err := fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			if !d.Type().IsRegular() || !checksums.IsManifestName(d.Name()) || (single != "" && p != single && checksums.SidecarTarget(d.Name()) != single) {
				return nil
			}
			f, err := r.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			data, err := io.ReadAll(io.LimitReader(f, 64<<20))
			if err != nil {
				return err
			}
			mans = append(mans, manifest{dir: path.Dir(p), name: p, data: data})
			return nil
		})
		if err != nil {
			return err
		}
		if single != "" && len(mans) == 0 {
			// A FILE with FILE.sha256 beside it.
			for _, ext := range []string{".sha256", ".sha512"} {
				if data, err := readBounded(target+ext, 1<<20); err == nil {
					mans = append(mans, manifest{dir: ".", name: single + ext, data: data})
				}
			}
		}
	}
	if len(mans) == 0 {
		return fmt.Errorf("no checksum manifest found in %s (looked for SHA256SUMS, SHA512SUMS, *.sha256, *.sha512); give --manifest or --expect-digest", target)
	}
	listed := map[string]bool{}
	for _, m := range mans {
		entries, lineErrs := checksums.Parse(m.name, m.data, checksums.AlgorithmFor(m.name))
		if strict {
			for _, le := range lineErrs {
				rep.Problems = append(rep.Problems, verifyProblem{Path: m.name, Status: "MALFORMED", Reason: le.Error()})
			}
		}
		if single != "" {
			entries = slices.DeleteFunc(entries, func(e checksums.Entry) bool { return path.Join(m.dir, e.Name) != single })
		}
		res := h.Verify(ctx, m.dir, entries)
		for _, x := range res {
			listed[x.Path] = true
		}
		rep.Checked += len(res)
		addChecksumProblems(rep, h, res)
		listed[m.name] = true
	}
	if rep.Checked == 0 {
		return fmt.Errorf("the manifests list no file to verify")
	}
	if strict && single == "" {
		_ = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			if d.Type().IsRegular() && !listed[p] && !checksums.IsManifestName(d.Name()) {
				rep.Problems = append(rep.Problems, verifyProblem{Path: p, Status: "UNLISTED", Reason: "no manifest lists this file"})
			}
			return nil
		})
	}
	return ctx.Err()
}

func addChecksumProblems(rep *verifyReport, h *checksums.Hasher, res []checksums.Result) {
	for _, x := range res {
		if x.Status == checksums.OK {
			continue
		}
		reason := x.Reason
		if x.Status == checksums.Mismatch && x.Size < checksums.LFSPointerMax {
			if f, err := h.Open(x.Path); err == nil {
				data, _ := io.ReadAll(io.LimitReader(f, checksums.LFSPointerMax))
				f.Close()
				if p, ok := checksums.ParseLFSPointer(data); ok {
					reason = fmt.Sprintf("a git-LFS pointer, not the file: the content (sha256 %s, %d bytes) was never fetched; run git lfs pull", p.OID, p.Size)
				}
			}
		}
		name := x.Path
		if name == "" {
			name = x.Name
		}
		rep.Problems = append(rep.Problems, verifyProblem{Path: name, Status: string(x.Status), Reason: reason})
	}
}

func readBounded(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	return data, nil
}

// ---- model ----

func newVerifyModelCmd(a *app) *cobra.Command {
	var o trustOptions
	var sigPath string
	var ignorePaths []string
	var ignoreUnsigned, ignoreGit bool
	c := &cobra.Command{
		Use:   "model PATH",
		Short: "Verify an OpenSSF model signature (model_signing's model.sig)",
		Long: `model verifies a model directory (or file) against its OpenSSF model signature
(sigstore model-transparency format, v0.2 to v1.1): key, certificate-chain and
Sigstore keyless methods, files and shards serializations. Every file must match
its signed digest; missing and unsigned files are reported by name.`,
		Example: "  mlwarden verify model ./llama --key model.pub\n  mlwarden verify model ./llama --certificate-chain ca.pem\n  mlwarden verify model ./llama --identity ci@example.com --oidc-issuer https://accounts.example --trusted-root trusted_root.json",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkFormat(o.format); err != nil {
				return err
			}
			rep := &verifyReport{Command: "model", Target: args[0]}
			t, err := modelTrust(&o)
			if err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					return err
				}
				return finishVerify(a, o.format, rep, err)
			}
			err = runVerifyModel(c.Context(), rep, args[0], sigPath, t, modelsig.Options{
				IgnorePaths: ignorePaths, IgnoreUnsignedFiles: ignoreUnsigned, KeepGitPaths: !ignoreGit,
			})
			return finishVerify(a, o.format, rep, err)
		},
	}
	f := c.Flags()
	f.SetNormalizeFunc(normalizeVerifyFlags)
	f.StringVar(&sigPath, "signature", "", "the signature file (default PATH/model.sig)")
	f.StringVar(&o.key, "key", "", "key method: the signer's PEM public key")
	f.StringArrayVar(&o.certChain, "certificate-chain", nil, "certificate method: trusted CA certificates, PEM (repeatable)")
	o.registerKeyless(f, "identity", "oidc-issuer")
	f.StringSliceVar(&ignorePaths, "ignore-paths", nil, "paths (relative to the model) to ignore, in addition to those the signature lists")
	f.BoolVar(&ignoreGit, "ignore-git-paths", true, "ignore .git, .gitattributes, .github and .gitignore")
	f.BoolVar(&ignoreUnsigned, "ignore-unsigned-files", false, "check only the files the signature names; do not report others")
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, json")
	return c
}

func modelTrust(o *trustOptions) (modelsig.Trust, error) {
	var t modelsig.Trust
	n := 0
	if o.key != "" {
		n++
		k, err := trust.LoadPublicKey(o.key)
		if err != nil {
			return t, &exitError{code: ExitError, err: err}
		}
		ek, ok := k.(*ecdsa.PublicKey)
		if !ok {
			return t, &exitError{code: ExitError, err: fmt.Errorf("--key: model signatures use elliptic-curve keys, got %T", k)}
		}
		t.Key = ek
	}
	if len(o.certChain) > 0 {
		n++
		cs, err := trust.LoadCertificates(o.certChain...)
		if err != nil {
			return t, &exitError{code: ExitError, err: err}
		}
		t.Chain = cs
	}
	tr, id, err := o.keyless()
	if err != nil {
		return t, err
	}
	if tr != nil {
		n++
		t.TrustedMaterial = tr
		t.Identity, t.IdentityRegexp, t.OIDCIssuer, t.OIDCIssuerRegexp = id.Subject, id.SubjectRegExp, id.Issuer, id.IssuerRegExp
	}
	if n != 1 {
		return t, usageError("give exactly one of --key, --certificate-chain, or --identity/--oidc-issuer with --trusted-root")
	}
	return t, nil
}

func runVerifyModel(ctx context.Context, rep *verifyReport, target, sigPath string, t modelsig.Trust, o modelsig.Options) error {
	fi, err := os.Stat(target)
	if err != nil {
		return err
	}
	rootDir, model := target, "."
	if !fi.IsDir() {
		rootDir, model = filepath.Dir(target), filepath.Base(target)
		if sigPath == "" {
			return usageError("a single-file model needs --signature FILE")
		}
	}
	if sigPath == "" {
		sigPath = filepath.Join(target, modelsig.DefaultSignatureName)
	}
	// A signature inside the model is not part of it.
	if rel, err := filepath.Rel(rootDir, sigPath); err == nil && fi.IsDir() && !strings.HasPrefix(rel, "..") {
		o.SignatureName = filepath.ToSlash(rel)
	} else {
		o.SignatureName = modelsig.DefaultSignatureName
	}
	data, err := readBounded(sigPath, 64<<20)
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
	res, err := modelsig.Verify(ctx, checksums.NewHasher(r.FS()), model, data, t, o)
	if err != nil {
		return err
	}
	rep.Method, rep.Signer, rep.Checked = string(res.Method), res.Signer, res.Files
	add := func(status string, names []string, reason string) {
		for _, n := range names {
			rep.Problems = append(rep.Problems, verifyProblem{Path: n, Status: status, Reason: reason})
		}
	}
	add("FAILED", res.Modified, "digest differs from the signed one")
	add("MISSING", res.Missing, "signed but not present")
	add("EXTRA", res.Extra, "present but not covered by the signature")
	add("REJECTED", res.Unsafe, "")
	return nil
}

// ---- blob ----

func newVerifyBlobCmd(a *app) *cobra.Command {
	var o trustOptions
	var bundlePath, sigPath, certPath string
	c := &cobra.Command{
		Use:   "blob FILE",
		Short: "Verify a file signed with cosign sign-blob (Sigstore bundle, or .sig and .pem)",
		Long: `blob verifies FILE against a Sigstore bundle (--bundle, default FILE.sigstore.json)
or a detached signature (--signature, default FILE.sig) as cosign sign-blob writes
them, with a public key or keyless (identity, OIDC issuer, trusted_root.json).`,
		Example: "  mlwarden verify blob model.gguf --bundle model.gguf.sigstore.json --key cosign.pub\n  mlwarden verify blob model.gguf --certificate-identity ci@example.com --certificate-oidc-issuer https://issuer --trusted-root trusted_root.json",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkFormat(o.format); err != nil {
				return err
			}
			rep := &verifyReport{Command: "blob", Target: args[0]}
			var t blobsig.Trust
			if o.key != "" {
				k, err := trust.LoadPublicKey(o.key)
				if err != nil {
					return &exitError{code: ExitError, err: err}
				}
				t.Key = k
			}
			tr, id, err := o.keyless()
			if err != nil {
				return err
			}
			if tr != nil {
				t.TrustedMaterial, t.Identities = tr, []trust.Identity{*id}
			}
			if (t.Key == nil) == (tr == nil) {
				return usageError("give --key, or --certificate-identity and --certificate-oidc-issuer with --trusted-root")
			}
			err = runVerifyBlob(rep, args[0], bundlePath, sigPath, certPath, t)
			return finishVerify(a, o.format, rep, err)
		},
	}
	f := c.Flags()
	f.StringVar(&bundlePath, "bundle", "", "Sigstore bundle (default FILE.sigstore.json when present)")
	f.StringVar(&sigPath, "signature", "", "detached base64 signature (default FILE.sig when no bundle)")
	f.StringVar(&certPath, "certificate", "", "signing certificate, PEM (default FILE.pem when present)")
	f.StringVar(&o.key, "key", "", "the signer's PEM public key (cosign.pub)")
	o.registerKeyless(f, "certificate-identity", "certificate-oidc-issuer")
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, json")
	return c
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func runVerifyBlob(rep *verifyReport, file, bundlePath, sigPath, certPath string, t blobsig.Trust) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.CopyBuffer(h, f, make([]byte, 1<<20))
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	digest := h.Sum(nil)
	rep.Digest = "sha256:" + hex.EncodeToString(digest)
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
		data, err := readBounded(bundlePath, 16<<20)
		if err != nil {
			return err
		}
		res, err = blobsig.VerifyBundle(data, digest, t)
		if err != nil {
			return err
		}
	} else {
		sig, err := readBounded(sigPath, 1<<20)
		if err != nil {
			return err
		}
		if certPath == "" && exists(file+".pem") {
			certPath = file + ".pem"
		}
		var cert []byte
		if certPath != "" {
			if cert, err = readBounded(certPath, 1<<20); err != nil {
				return err
			}
		}
		res, err = blobsig.VerifyDetached(sig, cert, digest, t)
		if err != nil {
			return err
		}
	}
	rep.Signer = res.Signer
	return nil
}

// ---- image ----

func newVerifyImageCmd(a *app) *cobra.Command {
	var o trustOptions
	var attType string
	var insecure bool
	c := &cobra.Command{
		Use:   "image REF",
		Short: "Verify an image's cosign signature or attestation",
		Long: `image verifies the cosign signatures (legacy .sig tags or Sigstore-bundle
referrers) of REF, bound to the digest REF resolves to, with a public key or
keyless (identity, OIDC issuer, trusted_root.json). With --attestation-type it
verifies an in-toto attestation of that type whose subject is the image.
Only the registry in REF is contacted; never TUF or Rekor.`,
		Example: "  mlwarden verify image registry.internal/ml/train:v3 --key cosign.pub\n  mlwarden verify image registry.example.com/nvidia/pytorch:24.05-py3 --certificate-identity-regexp '^https://github.com/org/' --certificate-oidc-issuer https://token.actions.githubusercontent.com --trusted-root trusted_root.json\n  mlwarden verify image REF --key cosign.pub --attestation-type slsaprovenance1",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkFormat(o.format); err != nil {
				return err
			}
			rep := &verifyReport{Command: "image", Target: args[0]}
			io := imagesig.Options{AttestationType: attType,
				Remote: []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("mlwarden")}}
			if insecure {
				io.NameOptions = append(io.NameOptions, name.Insecure)
			}
			if o.key != "" {
				k, err := trust.LoadPublicKey(o.key)
				if err != nil {
					return &exitError{code: ExitError, err: err}
				}
				io.Key = k
			}
			tr, id, err := o.keyless()
			if err != nil {
				return err
			}
			if tr != nil {
				io.TrustedMaterial, io.Identities = tr, []trust.Identity{*id}
			}
			if (io.Key == nil) == (tr == nil) {
				return usageError("give --key, or --certificate-identity and --certificate-oidc-issuer with --trusted-root")
			}
			res, err := imagesig.Verify(c.Context(), args[0], io)
			if res != nil {
				rep.Digest, rep.Format, rep.Signer, rep.Checked = res.Digest, res.Format, res.Signer, res.Verified
			}
			return finishVerify(a, o.format, rep, err)
		},
	}
	f := c.Flags()
	f.SetNormalizeFunc(normalizeVerifyFlags)
	f.StringVar(&o.key, "key", "", "the signer's PEM public key (cosign.pub)")
	o.registerKeyless(f, "certificate-identity", "certificate-oidc-issuer")
	f.StringVar(&attType, "attestation-type", "", "verify an attestation of this predicate type (URI or cosign name: slsaprovenance, slsaprovenance1, spdxjson, cyclonedx, vuln, custom)")
	f.BoolVar(&insecure, "allow-insecure-registry", false, "reach the registry over plain HTTP (loopback registries always are)")
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, json")
	return c
}
