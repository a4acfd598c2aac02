//go:build !mlwarden_sbatch

package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/github/go-spdx/v2/spdxexp"

	"github.com/mlwarden/mlwarden/scanners"
)

// cyclonedxWriter writes a CycloneDX 1.6 JSON ML-BOM (cyclonedx-go):
//
//   - one component per target (an image is a "container" with its digest,
//     the others an "application", a file target a "file"), its notes as
//     properties, and inside it:
//   - each model file a "machine-learning-model" component: format, size,
//     SHA-256 when known, where it came from (path; the image's digest and
//     the layer; the Hub repository and its commit) and, when a verified
//     signature covers it, who signed it;
//   - an image's layers as "file" components (diff ID as the SHA-256, blob
//     digest, index, the history entry that made them);
//   - declared ML frameworks ("framework") and CUDA versions ("platform");
//   - every finding as a vulnerability: the rule ID, its severity as the
//     rating, the message, why and fix, affecting the model file it is
//     about or else the target; a suppressed one carries the reason in its
//     analysis.
//
// What could not be scanned is in metadata properties (mlwarden:error), so
// an incomplete BOM says so. The serial number is derived from the content
// and the scan's time: the same scan gives the same BOM.
type cyclonedxWriter struct{ o Options }

const cdxNS = "mlwarden:"

func (c *cyclonedxWriter) Write(w io.Writer, res *scanners.Result) error {
	version := c.o.ToolVersion
	if version == "" {
		version = "dev"
	}
	bom := cdx.NewBOM()
	bom.SerialNumber = c.serial(res)
	meta := &cdx.Metadata{Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
		Type: cdx.ComponentTypeApplication, Name: "mlwarden", Version: version,
		ExternalReferences: &[]cdx.ExternalReference{{Type: cdx.ERTypeWebsite, URL: InformationURI}},
	}}}}
	if !c.o.End.IsZero() {
		meta.Timestamp = c.o.End.UTC().Format(time.RFC3339)
	}
	var mprops []cdx.Property
	s := res.Summary
	mprops = append(mprops, prop("summary", fmt.Sprintf("%d critical, %d high, %d medium, %d low, %d info, %d suppressed", s.Critical, s.High, s.Medium, s.Low, s.Info, s.Suppressed)))
	if s.Hidden > 0 {
		mprops = append(mprops, prop("hidden", strconv.Itoa(s.Hidden)))
	}
	for _, e := range res.Errors {
		mprops = append(mprops, prop("error", e.Error()))
	}
	meta.Properties = &mprops
	bom.Metadata = meta

	idx := ruleIndex(c.o.Rules)
	refs := map[string]string{} // target + "\x00" + path + "\x00" + layer → model bom-ref
	var comps []cdx.Component
	targetRef := map[string]string{}
	for ti, t := range res.Targets {
		ref := fmt.Sprintf("target-%d", ti+1)
		targetRef[t.Name] = ref
		tc := cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeApplication, Name: t.Name}
		switch t.Kind {
		case scanners.KindImage:
			tc.Type = cdx.ComponentTypeContainer
		case scanners.KindFile, scanners.KindScript:
			tc.Type = cdx.ComponentTypeFile
		}
		tprops := []cdx.Property{prop("target-kind", string(t.Kind))}
		if d, ok := strings.CutPrefix(t.Digest, "sha256:"); ok {
			tc.Version = t.Digest
			tc.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: d}}
		} else if t.Digest != "" {
			tc.Version = t.Digest
		}
		for _, n := range t.Notes {
			tprops = append(tprops, prop("note", n))
		}
		var signed []scanners.Component
		for _, sc := range res.Components {
			if sc.Target == t.Name && sc.Kind == scanners.ComponentSignature {
				signed = append(signed, sc)
				tprops = append(tprops, prop("signature", signatureText(sc)))
			}
		}
		var sub []cdx.Component
		n := 0
		for _, sc := range res.Components {
			if sc.Target != t.Name || sc.Kind == scanners.ComponentSignature {
				continue
			}
			n++
			cc := c.component(sc, t, fmt.Sprintf("%s-%d", ref, n), signed)
			if sc.Kind == scanners.ComponentModel {
				refs[t.Name+"\x00"+sc.Path+"\x00"+sc.Layer] = cc.BOMRef
			}
			sub = append(sub, cc)
		}
		tc.Properties = &tprops
		if len(sub) > 0 {
			tc.Components = &sub
		}
		comps = append(comps, tc)
	}
	bom.Components = &comps

	vulns := []cdx.Vulnerability{}
	for i, f := range res.Findings {
		r, ok := idx[f.RuleID]
		if !ok {
			r = scanners.Rule{ID: f.RuleID}
		}
		affects := refs[f.Target+"\x00"+f.Path+"\x00"+f.Layer]
		if affects == "" {
			affects = targetRef[f.Target]
		}
		v := cdx.Vulnerability{
			BOMRef:         fmt.Sprintf("finding-%d", i+1),
			ID:             f.RuleID,
			Source:         &cdx.Source{Name: "mlwarden", URL: InformationURI},
			Ratings:        &[]cdx.VulnerabilityRating{{Source: &cdx.Source{Name: "mlwarden"}, Severity: cdx.Severity(f.Severity.String()), Method: cdx.ScoringMethodOther}},
			Description:    f.Message,
			Detail:         r.Why,
			Recommendation: r.Fix,
		}
		if affects != "" {
			v.Affects = &[]cdx.Affects{{Ref: affects}}
		}
		vp := []cdx.Property{prop("rule_id", f.RuleID), prop("check", f.Check), prop("target", f.Target)}
		for _, kv := range [][2]string{{"path", f.Path}, {"layer", f.Layer}, {"commit", f.Commit}, {"evidence", f.Evidence}, {"fingerprint", f.Fingerprint}} {
			if kv[1] != "" {
				vp = append(vp, prop(kv[0], kv[1]))
			}
		}
		if f.Line > 0 {
			vp = append(vp, prop("line", strconv.Itoa(f.Line)))
		}
		v.Properties = &vp
		if f.Suppressed != "" {
			v.Analysis = &cdx.VulnerabilityAnalysis{Detail: "suppressed: " + f.Suppressed}
		}
		vulns = append(vulns, v)
	}
	if len(vulns) > 0 {
		bom.Vulnerabilities = &vulns
	}
	return cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false).EncodeVersion(bom, cdx.SpecVersion1_6)
}

// component is one component of target t as CycloneDX has it.
func (c *cyclonedxWriter) component(sc scanners.Component, t scanners.Target, ref string, signed []scanners.Component) cdx.Component {
	cc := cdx.Component{BOMRef: ref, Name: sc.Name, Version: sc.Version}
	var props []cdx.Property
	switch sc.Kind {
	case scanners.ComponentModel:
		cc.Type = cdx.ComponentTypeMachineLearningModel
		cc.Name = sc.Path
		props = append(props, prop("format", sc.Format))
		switch t.Kind {
		case scanners.KindImage:
			props = append(props, prop("source", "image "+t.Name+at(t.Digest)+", layer "+sc.Layer))
		case scanners.KindHub:
			props = append(props, prop("source", "Hub repository "+t.Name+at(t.Digest)))
		case scanners.KindRepo:
			src := "repository " + t.Name
			if sc.Commit != "" {
				src += " at " + sc.Commit
			}
			props = append(props, prop("source", src))
		default:
			props = append(props, prop("source", "path "+path.Join(t.Name, sc.Path)))
		}
		for _, s := range signed {
			if sc.Layer == s.Layer && (s.Subject == "." || sc.Path == s.Subject || strings.HasPrefix(sc.Path, strings.TrimSuffix(s.Subject, "/")+"/")) {
				props = append(props, prop("signature", signatureText(s)))
			}
		}
		if mc := modelCard(sc); mc != nil {
			cc.ModelCard = mc
		}
		cc.Licenses = cdxLicenses(sc.License)
	case scanners.ComponentLayer:
		cc.Type = cdx.ComponentTypeFile
		cc.Name = "layer " + sc.Properties["index"]
		if n, err := strconv.Atoi(sc.Properties["index"]); err == nil {
			cc.Name = fmt.Sprintf("layer %d", n+1)
		}
		cc.Version = sc.Layer
		for _, k := range []string{"blob", "created_by"} {
			if v := sc.Properties[k]; v != "" {
				props = append(props, prop(k, v))
			}
		}
	case scanners.ComponentFramework:
		cc.Type = cdx.ComponentTypeFramework
	case scanners.ComponentCUDA:
		cc.Type = cdx.ComponentTypePlatform
		if v := sc.Properties["declared-as"]; v != "" {
			props = append(props, prop("declared-as", v))
		}
	default:
		cc.Type = cdx.ComponentTypeData
	}
	if cc.Name == "" {
		cc.Name = string(sc.Kind)
	}
	if d, ok := strings.CutPrefix(sc.Layer, "sha256:"); ok && sc.Kind == scanners.ComponentLayer {
		cc.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: d}}
	}
	if sc.SHA256 != "" {
		cc.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sc.SHA256}}
	}
	if sc.Size > 0 {
		props = append(props, prop("size", strconv.FormatInt(sc.Size, 10)))
	}
	for _, kv := range [][2]string{{"path", sc.Path}, {"layer", sc.Layer}, {"commit", sc.Commit}} {
		if kv[1] != "" && !(kv[0] == "layer" && sc.Kind == scanners.ComponentLayer) {
			props = append(props, prop(kv[0], kv[1]))
		}
	}
	if sc.Line > 0 {
		props = append(props, prop("line", strconv.Itoa(sc.Line)))
	}
	if len(props) > 0 {
		cc.Properties = &props
	}
	return cc
}

// cdxLicenses is a model's licence as CycloneDX has it, declared (read
// from the model's card or metadata): an SPDX identifier as a license id,
// anything else (an expression, a LicenseRef-…) as an SPDX expression.
func cdxLicenses(expr string) *cdx.Licenses {
	if expr == "" {
		return nil
	}
	declared := cdx.LicenseAcknowledgementDeclared
	if ok, id := spdxexp.ActiveLicense(expr); ok && id == expr {
		return &cdx.Licenses{{License: &cdx.License{ID: id, Acknowledgement: declared}}}
	}
	return &cdx.Licenses{{Expression: expr, Acknowledgement: &declared}}
}

// modelCard is what a model file's facts say of its card (Properties
// "task", "architecture", "architecture_family"), nil when nothing.
func modelCard(sc scanners.Component) *cdx.MLModelCard {
	p := sc.Properties
	if p["task"] == "" && p["architecture"] == "" && p["architecture_family"] == "" {
		return nil
	}
	return &cdx.MLModelCard{ModelParameters: &cdx.MLModelParameters{Task: p["task"], ModelArchitecture: p["architecture"], ArchitectureFamily: p["architecture_family"]}}
}

func signatureText(s scanners.Component) string {
	t := "verified: " + s.Path + " covers " + s.Subject
	if s.Signer != "" {
		t += ", signed by " + s.Signer
	}
	return t
}

func at(digest string) string {
	if digest == "" {
		return ""
	}
	return " at " + digest
}

func prop(name, value string) cdx.Property { return cdx.Property{Name: cdxNS + name, Value: value} }

// serial is the BOM's serial number: a UUID from the result and the scan's
// time.
func (c *cyclonedxWriter) serial(res *scanners.Result) string {
	var b strings.Builder
	_ = json.NewEncoder(&b).Encode(res)
	fmt.Fprintf(&b, "%d %d", c.o.Start.UnixNano(), c.o.End.UnixNano())
	return "urn:uuid:" + uuid5(b.String())
}
