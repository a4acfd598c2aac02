//go:build !mlwarden_sbatch

package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mlwarden/mlwarden/scanners/signatures/verify"
)

// verifyReport is what `mlwarden verify` prints: text for people, JSON
// (--format json) for scripts.
type verifyReport = verify.Report

// trustFlags are the trust flags shared by the subcommands, named as
// cosign's and model_signing's, and the output format.
type trustFlags struct {
	files  verify.TrustFiles
	format string
}

func (o *trustFlags) registerKeyless(f *pflag.FlagSet, idName, issName string) {
	f.StringVar(&o.files.TrustedRoot, "trusted-root", "", "Sigstore trusted_root.json for keyless verification (never fetched: give the file)")
	f.StringVar(&o.files.Identity.Subject, idName, "", "keyless: the signer's identity (certificate SAN: email or URI)")
	f.StringVar(&o.files.Identity.SubjectRegExp, idName+"-regexp", "", "keyless: a regular expression the signer's identity must match")
	f.StringVar(&o.files.Identity.Issuer, issName, "", "keyless: the OIDC issuer of the signer's identity")
	f.StringVar(&o.files.Identity.IssuerRegExp, issName+"-regexp", "", "keyless: a regular expression the OIDC issuer must match")
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

// finishVerify prints what verify returned and sets the exit code: 0
// verified, 1 failed, 2 could not check. A nil report means the options
// were unusable: nothing was checked, so only the error is told.
func finishVerify(a *app, format string, rep *verifyReport, err error) error {
	if rep == nil {
		return &exitError{code: ExitError, err: err}
	}
	switch format {
	case "json":
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if e := enc.Encode(rep); e != nil {
			return &exitError{code: ExitError, err: e}
		}
	default:
		printVerify(a, rep)
	}
	if err != nil {
		return &exitError{code: ExitError, err: fmt.Errorf("verify %s %s: could not check: %w", rep.Command, rep.Target, err)}
	}
	if rep.Status == verify.StatusFailed {
		a.code = ExitFindings
	}
	return nil
}

// printVerify writes rep as text: one line per problem, then the verdict.
func printVerify(a *app, rep *verifyReport) {
	for _, p := range rep.Problems {
		fmt.Fprintf(a.stdout, "%s: %s", p.Path, p.Status)
		if p.Reason != "" {
			fmt.Fprintf(a.stdout, " (%s)", p.Reason)
		}
		fmt.Fprintln(a.stdout)
	}
	switch rep.Status {
	case verify.StatusVerified:
		fmt.Fprintf(a.stdout, "Verified OK: %s", rep.Target)
		if rep.Signer != "" {
			fmt.Fprintf(a.stdout, " (signed by %s)", rep.Signer)
		}
		if rep.Checked > 0 {
			fmt.Fprintf(a.stdout, ", %d files checked", rep.Checked)
		}
		fmt.Fprintln(a.stdout)
	case verify.StatusFailed:
		fmt.Fprintf(a.stdout, "Verification FAILED: %s", rep.Target)
		if rep.Error != "" {
			fmt.Fprintf(a.stdout, ": %s", rep.Error)
		} else {
			fmt.Fprintf(a.stdout, ": %d problems", len(rep.Problems))
		}
		fmt.Fprintln(a.stdout)
	}
}

func checkFormat(f string) error {
	if f != "text" && f != "json" {
		return usageError("--format: unknown format %q (valid: text, json)", f)
	}
	return nil
}

func newVerifyChecksumsCmd(a *app) *cobra.Command {
	var o verify.ChecksumsOptions
	var format string
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
			rep, err := verify.Checksums(c.Context(), args[0], o)
			return finishVerify(a, format, rep, err)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Manifests, "manifest", nil, "checksum manifest to verify DIR against (repeatable; default: manifests found in DIR)")
	f.StringVar(&o.ExpectDigest, "expect-digest", "", "the digest FILE must have, as sha256:HEX (or sha512:HEX)")
	f.BoolVar(&o.Strict, "strict", false, "also fail on unreadable manifest lines and on files no manifest lists")
	f.StringVarP(&format, "format", "f", "text", "output format: text, json")
	return c
}

func newVerifyModelCmd(a *app) *cobra.Command {
	var o trustFlags
	var mo verify.ModelOptions
	var ignoreGit bool
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
			mo.Trust, mo.KeepGitPaths = o.files, !ignoreGit
			rep, err := verify.Model(c.Context(), args[0], mo)
			return finishVerify(a, o.format, rep, err)
		},
	}
	f := c.Flags()
	f.SetNormalizeFunc(normalizeVerifyFlags)
	f.StringVar(&mo.Signature, "signature", "", "the signature file (default PATH/model.sig)")
	f.StringVar(&o.files.Key, "key", "", "key method: the signer's PEM public key")
	f.StringArrayVar(&o.files.CertificateChain, "certificate-chain", nil, "certificate method: trusted CA certificates, PEM (repeatable)")
	o.registerKeyless(f, "identity", "oidc-issuer")
	f.StringSliceVar(&mo.IgnorePaths, "ignore-paths", nil, "paths (relative to the model) to ignore, in addition to those the signature lists")
	f.BoolVar(&ignoreGit, "ignore-git-paths", true, "ignore .git, .gitattributes, .github and .gitignore")
	f.BoolVar(&mo.IgnoreUnsignedFiles, "ignore-unsigned-files", false, "check only the files the signature names; do not report others")
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, json")
	return c
}

func newVerifyBlobCmd(a *app) *cobra.Command {
	var o trustFlags
	var bo verify.BlobOptions
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
			bo.Trust = o.files
			rep, err := verify.Blob(c.Context(), args[0], bo)
			return finishVerify(a, o.format, rep, err)
		},
	}
	f := c.Flags()
	f.StringVar(&bo.Bundle, "bundle", "", "Sigstore bundle (default FILE.sigstore.json when present)")
	f.StringVar(&bo.Signature, "signature", "", "detached base64 signature (default FILE.sig when no bundle)")
	f.StringVar(&bo.Certificate, "certificate", "", "signing certificate, PEM (default FILE.pem when present)")
	f.StringVar(&o.files.Key, "key", "", "the signer's PEM public key (cosign.pub)")
	o.registerKeyless(f, "certificate-identity", "certificate-oidc-issuer")
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, json")
	return c
}

func newVerifyImageCmd(a *app) *cobra.Command {
	var o trustFlags
	var imo verify.ImageOptions
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
			imo.Trust = o.files
			imo.Remote = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("mlwarden")}
			if insecure {
				imo.NameOptions = []name.Option{name.Insecure}
			}
			rep, err := verify.Image(c.Context(), args[0], imo)
			return finishVerify(a, o.format, rep, err)
		},
	}
	f := c.Flags()
	f.SetNormalizeFunc(normalizeVerifyFlags)
	f.StringVar(&o.files.Key, "key", "", "the signer's PEM public key (cosign.pub)")
	o.registerKeyless(f, "certificate-identity", "certificate-oidc-issuer")
	f.StringVar(&imo.AttestationType, "attestation-type", "", "verify an attestation of this predicate type (URI or cosign name: slsaprovenance, slsaprovenance1, spdxjson, cyclonedx, vuln, custom)")
	f.BoolVar(&insecure, "allow-insecure-registry", false, "reach the registry over plain HTTP (loopback registries always are)")
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, json")
	return c
}
