package policy

import (
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Input is what one target's policies see, built once per target
// (InputsOf) and shared by every policy evaluated on it. The `cel` tags are
// the names policies use; docs/policies.md documents each field and where
// it comes from.
type Input struct {
	Target   Target    `cel:"target"`
	Findings []Finding `cel:"findings"`
	Models   []Model   `cel:"models"`
	Images   []Image   `cel:"images"`
	Packages []Package `cel:"packages"`
	CUDA     []CUDA    `cel:"cuda"`
	// Containers are an admitted workload's containers (empty for scan,
	// sweep and sbatch targets).
	Containers []Container `cel:"containers"`
}

// Target is the scanned thing: a report target, or a workload at admission.
type Target struct {
	// Name is the target as the report names it (dir:…, registry:…), or
	// the workload's name at admission.
	Name string `cel:"name"`
	// Kind is the report target's kind (dir, file, image, repo, script,
	// hub), or at admission the workload's kind in lower case (pod,
	// deployment, …).
	Kind string `cel:"kind"`
	// Namespace, Labels and User are the admission request's namespace,
	// the workload's labels and the requesting user; empty elsewhere.
	Namespace string            `cel:"namespace"`
	Labels    map[string]string `cel:"labels"`
	User      string            `cel:"user"`
}

// Finding is one finding of the target, suppressed ones included.
type Finding struct {
	RuleID   string `cel:"rule_id"`
	Check    string `cel:"check"`
	Severity string `cel:"severity"`
	Path     string `cel:"path"`
	Line     int    `cel:"line"`
	// Verification is what the provider said of a secret (live, revoked,
	// unknown; "" when not asked: --verify-secrets).
	Verification string `cel:"verification"`
	// Suppressed is whether an inline comment, an ignore entry, the
	// baseline or a VEX statement suppressed the finding.
	Suppressed bool `cel:"suppressed"`
}

// Model is a model file of the target.
type Model struct {
	Path   string `cel:"path"`
	Format string `cel:"format"`
	SHA256 string `cel:"sha256"`
	// License is an SPDX identifier, or "" when unknown.
	License string `cel:"license"`
	// Signed is whether a model signature that verified covers the file;
	// Signers are who signed it (the identities the signatures check
	// verified).
	Signed  bool     `cel:"signed"`
	Signers []string `cel:"signers"`
	// Layer is the image layer holding it ("" outside images).
	Layer string `cel:"layer"`
}

// Image is an image the target is or runs.
type Image struct {
	Reference string `cel:"reference"`
	Digest    string `cel:"digest"`
	// Volume is set for an image mounted as a volume at admission.
	Volume bool `cel:"volume"`
}

// Package is a package version the target declares.
type Package struct {
	Ecosystem string `cel:"ecosystem"`
	Name      string `cel:"name"`
	Version   string `cel:"version"`
}

// CUDA is a CUDA version the target declares.
type CUDA struct {
	Declared string `cel:"declared"`
	// Verdict is "ok", or the rule ID of the cuda finding about the
	// declaration (cuda/driver-too-old, …).
	Verdict string `cel:"verdict"`
	Path    string `cel:"path"`
}

// Container is one container of an admitted workload.
type Container struct {
	Name     string            `cel:"name"`
	Image    string            `cel:"image"`
	Requests map[string]string `cel:"requests"`
	Limits   map[string]string `cel:"limits"`
}

// InputsOf builds, in one pass over res, the input of each of its targets,
// in the order of res.Targets.
func InputsOf(res *scanners.Result) []*Input {
	by := make(map[string]*Input, len(res.Targets))
	out := make([]*Input, 0, len(res.Targets))
	for _, t := range res.Targets {
		if by[t.Name] != nil {
			continue
		}
		in := &Input{Target: Target{Name: t.Name, Kind: string(t.Kind), Labels: map[string]string{}}}
		if t.Kind == scanners.KindImage {
			in.Images = append(in.Images, Image{Reference: imageRef(t.Name), Digest: t.Digest})
		}
		by[t.Name] = in
		out = append(out, in)
	}
	cudaAt := map[string]string{} // path and line of a cuda finding → its rule
	for _, f := range res.Findings {
		in := by[f.Target]
		if in == nil {
			continue
		}
		in.Findings = append(in.Findings, FindingOf(f))
		if f.Check == scanners.CheckCUDA {
			cudaAt[f.Target+"\x00"+f.Path] = f.RuleID
		}
		if v := f.Vulnerability; v != nil {
			if p, ok := packageOfPURL(v.PURL); ok {
				in.Packages = appendPackage(in.Packages, p)
			}
		}
	}
	type sig struct{ dir, layer string }
	signers := map[string][]sig{} // target → verified model signatures
	signerOf := map[sig][]string{}
	for _, c := range res.Components {
		if c.Kind == scanners.ComponentSignature {
			k := sig{c.Subject, c.Layer}
			if _, ok := signerOf[k]; !ok {
				signers[c.Target] = append(signers[c.Target], k)
			}
			signerOf[k] = append(signerOf[k], c.Signer)
		}
	}
	for _, c := range res.Components {
		in := by[c.Target]
		if in == nil {
			continue
		}
		switch c.Kind {
		case scanners.ComponentModel:
			m := Model{Path: c.Path, Format: c.Format, SHA256: c.SHA256, License: c.License, Layer: c.Layer}
			for _, s := range signers[c.Target] {
				if s.layer == c.Layer && under(c.Path, s.dir) {
					m.Signed = true
					m.Signers = append(m.Signers, signerOf[s]...)
				}
			}
			in.Models = append(in.Models, m)
		case scanners.ComponentFramework:
			in.Packages = appendPackage(in.Packages, Package{Ecosystem: "PyPI", Name: c.Name, Version: c.Version})
		case scanners.ComponentCUDA:
			v := cudaAt[c.Target+"\x00"+c.Path]
			if v == "" {
				v = "ok"
			}
			in.CUDA = append(in.CUDA, CUDA{Declared: c.Version, Verdict: v, Path: c.Path})
		}
	}
	return out
}

// FindingOf is a finding as policies see it.
func FindingOf(f scanners.Finding) Finding {
	return Finding{RuleID: f.RuleID, Check: f.Check, Severity: f.Severity.String(), Path: f.Path, Line: f.Line,
		Verification: f.Verification, Suppressed: f.Suppressed != ""}
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	p, dir = strings.TrimPrefix(p, "/"), strings.TrimPrefix(dir, "/")
	if dir == "" || dir == "." {
		return true
	}
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") || path.Dir(p) == dir
}

// imageRef is an image target's reference without its scheme.
func imageRef(name string) string {
	for _, s := range []string{"registry:", "oci:", "docker-archive:"} {
		if r, ok := strings.CutPrefix(name, s); ok {
			return r
		}
	}
	return name
}

func appendPackage(ps []Package, p Package) []Package {
	for _, q := range ps {
		if q == p {
			return ps
		}
	}
	return append(ps, p)
}

// packageOfPURL reads the ecosystem, name and version of a vulns finding's
// package URL (pkg:pypi/torch@2.5.1, pkg:generic/nvidia/driver@550.54.15).
func packageOfPURL(purl string) (Package, bool) {
	rest, ok := strings.CutPrefix(purl, "pkg:")
	if !ok {
		return Package{}, false
	}
	rest, _, _ = strings.Cut(rest, "?")
	rest, version, _ := strings.Cut(rest, "@")
	typ, name, ok := strings.Cut(rest, "/")
	if !ok {
		return Package{}, false
	}
	eco := typ
	switch typ {
	case "pypi":
		eco = "PyPI"
	case "generic":
		if n, ok := strings.CutPrefix(name, "nvidia/"); ok {
			eco, name = "NVIDIA", n
		}
	}
	return Package{Ecosystem: eco, Name: name, Version: version}, true
}
