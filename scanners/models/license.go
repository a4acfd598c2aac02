package models

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/license"
)

// Model licences and cards (docs/design/model-licenses.md). A model file's
// licence is read from, most specific first: the file's own metadata (GGUF
// general.license, a safetensors __metadata__ "license"), the model card
// (the README.md metadata block) of its directory or the nearest directory
// above it, then what the target says as a whole (a Hub repository's
// cardData, an OCI model artifact's config: ModelPack descriptor.licenses,
// KitOps package.license and model.license). Each is normalised to SPDX
// (scanners/license). FinishTarget fills Component.License of each model
// component and judges the target: models/license-unknown,
// models/license-restricted, models/card-missing, models/gated.

var (
	ruleLicenseUnknown = rule("license-unknown", scanners.SeverityLow,
		"Model has no licence that can be read",
		"Neither the model file's metadata, nor a model card (README.md metadata), nor the repository or artifact names a licence mlwarden can map to SPDX, so whether it may be used, shipped or sold is unknown.",
		"Add `license:` (an SPDX identifier or a Hub licence key) to the model card's metadata, or `license: other` with license_name and license_link.")
	ruleLicenseRestricted = rule("license-restricted", scanners.SeverityMedium,
		"Model licence forbids commercial use or allows research only",
		"A non-commercial (CC-BY-NC-*, PolyForm Noncommercial) or research-only licence (FAIR Noncommercial Research, Apple AMLR, ...) makes shipping the model in a product a licence breach.",
		"Use the model for research only, obtain a commercial licence, or choose a model under a licence that allows your use; a policy (docs/policies.md) can allow it per namespace.")
	ruleCardMissing = rule("card-missing", scanners.SeverityInfo,
		"Model directory has no model card",
		"A model card (README.md with metadata) says what the model is for, how it was trained and under which licence; without one its provenance and terms cannot be checked.",
		"Add a README.md with the Hub's metadata block (license, base_model, datasets) beside the model's config.")
	ruleGated = rule("gated", scanners.SeverityInfo,
		"Model repository is gated",
		"Access to a gated Hub repository needs an account that accepted the authors' conditions (and, for manual gates, their approval): builds and pods that download it need a token of such an account.",
		"Make sure the conditions fit your use and the token your pipeline uses has been granted access; mirror the approved revision if builds must not depend on it.")
)

// cardFile reports whether p is a model card.
func cardFile(p string) bool { return strings.EqualFold(path.Base(p), "README.md") }

// modelConfigPath is where the image source hands an OCI model artifact's
// config blob to the checks (image.ModelConfigPath).
const modelConfigPath = "/.model-config.json"

// markerFiles are the files that make a directory with model files a model
// directory, one that a model card should describe: the configs that
// from_pretrained, diffusers, PEFT, Meta/Mistral checkpoints, Ollama,
// KitOps and MLflow read beside the weights. A stray weights file (a test
// fixture, a checkpoint in a code repository) has none.
var markerFiles = map[string]bool{
	"config.json": true, "model_index.json": true, "adapter_config.json": true,
	"generation_config.json": true, "params.json": true, "modelfile": true,
	"kitfile": true, "mlmodel": true, "model.safetensors.index.json": true,
	"pytorch_model.bin.index.json": true,
}

func markerFile(p string) bool {
	b := path.Base(p)
	if len(b) > 32 {
		return false
	}
	var buf [32]byte
	n := copy(buf[:], b)
	for i := range n {
		if c := buf[i]; c >= 'A' && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	return markerFiles[string(buf[:n])]
}

// licenseFile reports whether a is one the check reads for licences and
// cards only (Scan).
func licenseFile(a *scanners.Artifact) bool {
	return cardFile(a.Path) || markerFile(a.Path) || modelConfig(a)
}

func modelConfig(a *scanners.Artifact) bool {
	return a.Path == modelConfigPath && a.TargetKind == scanners.KindImage
}

// wantsLicense reports the licence files the check makes the dispatcher
// read: a README.md that opens with a metadata block, a model artifact's
// config. A README without one, and the model configs that make a model
// directory (markerFiles), only ride along (Rides): other checks read such
// small text files anyway, and when none does (--checks models) neither
// the card nor the config is seen, so a missing card is not reported
// rather than reported wrongly (docs/design/model-licenses.md).
func wantsLicense(a *scanners.Artifact, head []byte) bool {
	return cardFile(a.Path) && cardHead(head) || modelConfig(a)
}

// cardHead reports whether head opens a metadata block ("---" alone on the
// first line).
func cardHead(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	return bytes.HasPrefix(head, []byte("---\n")) || bytes.HasPrefix(head, []byte("---\r\n"))
}

// Rides implements scanners.Rider: every README.md and model config that
// another check reads is seen, for the card rules.
func (s *Scanner) Rides(a *scanners.Artifact, head []byte) bool {
	return (a.Kind == "" || a.Kind == scanners.ArtifactFile) && (cardFile(a.Path) || markerFile(a.Path))
}

// fact is one thing an artifact said of licences: kept per target until
// FinishTarget, and kept with the artifact's result where a source caches
// it (StateKeeper).
type fact struct {
	A scanners.KeptArtifact `json:"a"`
	// What kind of fact: "card" (a README.md, Card set when it has
	// metadata), "marker" (a config that makes its directory a model
	// directory), "meta" (a model file's own metadata: License, From),
	// "target" (a model artifact's config: License for every model).
	What    string `json:"what"`
	License string `json:"license,omitempty"`
	Raw     string `json:"raw,omitempty"`
	From    string `json:"from,omitempty"`
	HasMeta bool   `json:"has_meta,omitempty"`
}

// licState is a target's facts.
type licState struct {
	facts []fact
}

// maxFacts bounds the facts kept per target (an image with a million
// config.json files); facts past it are dropped, which can only make
// findings of these info and low rules go missing, never a licence wrong
// (a card dropped leaves its models without a licence: license-unknown).
const maxFacts = 100_000

func (s *Scanner) addFacts(target string, fs ...fact) {
	if len(fs) == 0 {
		return
	}
	s.licMu.Lock()
	defer s.licMu.Unlock()
	if s.lic == nil {
		s.lic = map[string]*licState{}
	}
	st := s.lic[target]
	if st == nil {
		st = &licState{}
		s.lic[target] = st
	}
	if len(st.facts) < maxFacts {
		st.facts = append(st.facts, fs...)
	}
}

func (s *Scanner) takeFacts(target string) []fact {
	s.licMu.Lock()
	defer s.licMu.Unlock()
	st := s.lic[target]
	delete(s.lic, target)
	if st == nil {
		return nil
	}
	return st.facts
}

// note records f for a's target, and keeps it with a's result.
func (s *Scanner) note(ctx context.Context, a *scanners.Artifact, f fact) {
	f.A = scanners.Keep(*a)
	s.addFacts(a.Target, f)
	if scanners.KeepsState(ctx) {
		if data, err := json.Marshal(f); err == nil {
			scanners.KeepState(ctx, data)
		}
	}
}

// StateName implements scanners.StateKeeper.
func (s *Scanner) StateName() string { return scanners.CheckModels }

// RestoreState implements scanners.StateKeeper.
func (s *Scanner) RestoreState(_ context.Context, target string, data []byte) error {
	var f fact
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("models state: %w", err)
	}
	s.addFacts(target, f)
	return nil
}

// scanLicenseFile reads a card, a marker or a model artifact's config.
func (s *Scanner) scanLicenseFile(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	switch {
	case markerFile(a.Path):
		s.note(ctx, a, fact{What: "marker"})
		return nil, nil
	case cardFile(a.Path):
		head := make([]byte, min(c.Size(), license.MaxCardHead))
		n, err := c.ReadAt(head, 0)
		if n < len(head) && err != nil {
			return nil, fmt.Errorf("read %s: %w", a.Path, err)
		}
		card, ok, err := license.ParseCard(head[:n])
		f := fact{What: "card", HasMeta: ok, License: card.License, Raw: card.Raw, From: "model card " + a.Path}
		if err != nil {
			// A card the Hub cannot read names no licence: say so in the
			// licence finding rather than fail the file.
			f.Raw = "unreadable metadata: " + firstLine(err.Error())
		}
		s.note(ctx, a, f)
		return nil, nil
	}
	data, truncated, err := scanners.ReadAll(c, 1<<20)
	if err != nil || truncated {
		return nil, nil // not a config this check reads: no licence from it
	}
	var cfg struct {
		Descriptor struct {
			Licenses []string `json:"licenses"`
		} `json:"descriptor"`
		Package struct {
			License string `json:"license"`
		} `json:"package"`
		Model struct {
			License string `json:"license"`
		} `json:"model"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return nil, nil
	}
	raws, from := cfg.Descriptor.Licenses, "ModelPack config descriptor.licenses"
	if len(raws) == 0 {
		raws, from = []string{cfg.Model.License}, "Kitfile model.license"
		if cfg.Model.License == "" {
			raws, from = []string{cfg.Package.License}, "Kitfile package.license"
		}
	}
	raws = raws[:min(len(raws), 20)]
	if len(raws) == 0 || raws[0] == "" {
		return nil, nil
	}
	ids := make([]string, len(raws))
	for i, r := range raws {
		ids[i] = license.Normalize(r)
	}
	f := fact{What: "target", Raw: clipRaw(strings.Join(raws, ", ")), From: from}
	if !slices.Contains(ids, "") {
		f.License = license.Join(ids)
	}
	s.note(ctx, a, f)
	return nil, nil
}

// metaLicense records the licence a model file's own metadata names
// (GGUF general.license, safetensors __metadata__ "license"); only a file's
// top level counts, not a member of an archive inside it.
func (sc *scan) metaLicense(p place, from, raw string) {
	if len(p) > 0 || sc.a.Kind != scanners.ArtifactFile || strings.TrimSpace(raw) == "" {
		return
	}
	sc.s.note(sc.ctx, sc.a, fact{What: "meta", License: license.Normalize(raw), Raw: clipRaw(raw), From: from})
}

func clipRaw(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return clipRaw(l)
}

// FinishTarget implements scanners.TargetFinisher: it gives each model
// component of t its licence and reports the licence and card rules.
func (s *Scanner) FinishTarget(ctx context.Context, t scanners.Target) ([]scanners.Finding, error) {
	facts := s.takeFacts(t.Name)
	j := newJudge(t, facts)
	scanners.EditComponents(ctx, func(c *scanners.Component) {
		if c.Kind != scanners.ComponentModel || c.Target != t.Name && c.Target != "" {
			return
		}
		j.model(c)
	})
	return j.findings(), nil
}

// judge gives licences to models and collects what to report.
type judge struct {
	t       scanners.Target
	meta    map[string]fact  // by path
	cards   map[string]fact  // by directory
	markers map[string]bool  // directories
	whole   *fact            // the target's own licence
	dirs    map[string]*mdir // directories with model files
}

// mdir is one directory's model files and their licences.
type mdir struct {
	dir    string
	models []string
	// byLicense: licence → the fact it came from; unknown the files
	// without one.
	byLicense map[string]fact
	unknown   []string
	layer     string
}

func newJudge(t scanners.Target, facts []fact) *judge {
	j := &judge{t: t, meta: map[string]fact{}, cards: map[string]fact{}, markers: map[string]bool{}, dirs: map[string]*mdir{}}
	for _, f := range facts {
		dir := dirOf(f.A.Path)
		switch f.What {
		case "meta":
			j.meta[f.A.Path] = f
		case "card":
			j.cards[dir] = f
		case "marker":
			j.markers[dir] = true
		case "target":
			j.whole = &f
		}
	}
	if j.whole == nil && t.Kind == scanners.KindHub {
		if f, ok := hubFact(t); ok {
			j.whole = &f
		}
	}
	return j
}

// hubFact is the licence a Hub repository's cardData names.
func hubFact(t scanners.Target) (fact, bool) {
	raw := t.Properties["hub.license"]
	if raw == "" {
		return fact{}, false
	}
	var ids []string
	for _, r := range strings.Split(raw, ",") {
		id := license.Normalize(r)
		if id == "" && strings.EqualFold(strings.TrimSpace(r), "other") {
			id = license.Other(t.Properties["hub.license_name"])
		}
		ids = append(ids, id)
	}
	f := fact{What: "target", Raw: raw, From: "the Hub's card data"}
	if !slices.Contains(ids, "") {
		f.License = license.Join(ids)
	}
	return f, true
}

// licenseOf is the fact that names c's licence, most specific first.
func (j *judge) licenseOf(p string) (fact, bool) {
	if f, ok := j.meta[p]; ok && f.License != "" {
		return f, true
	}
	for d := dirOf(p); ; d = path.Dir(d) {
		if f, ok := j.cards[d]; ok && f.License != "" {
			return f, true
		}
		if d == "." || d == "/" || d == "" {
			break
		}
	}
	if j.whole != nil && j.whole.License != "" {
		return *j.whole, true
	}
	return fact{}, false
}

func (j *judge) model(c *scanners.Component) {
	dir := dirOf(c.Path)
	d := j.dirs[dir]
	if d == nil {
		d = &mdir{dir: dir, byLicense: map[string]fact{}, layer: c.Layer}
		j.dirs[dir] = d
	}
	d.models = append(d.models, c.Path)
	f, ok := j.licenseOf(c.Path)
	if !ok {
		d.unknown = append(d.unknown, c.Path)
		return
	}
	if _, seen := d.byLicense[f.License]; !seen {
		d.byLicense[f.License] = f
	}
	c.License = f.License
	props := make(map[string]string, len(c.Properties)+1)
	for k, v := range c.Properties {
		props[k] = v
	}
	props["license-source"] = f.From
	c.Properties = props
}

// findings reports, per directory with model files: the files without a
// licence (license-unknown), each restricted licence (license-restricted),
// a model directory without a card (card-missing); and a gated Hub
// repository (gated).
func (j *judge) findings() []scanners.Finding {
	var out []scanners.Finding
	dirs := make([]string, 0, len(j.dirs))
	for d := range j.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dn := range dirs {
		d := j.dirs[dn]
		sort.Strings(d.models)
		sort.Strings(d.unknown)
		if len(d.unknown) > 0 {
			out = append(out, j.unknownFinding(d))
		}
		lics := make([]string, 0, len(d.byLicense))
		for l := range d.byLicense {
			lics = append(lics, l)
		}
		sort.Strings(lics)
		for _, l := range lics {
			f := d.byLicense[l]
			id, why, ok := license.Restricted(l)
			if !ok {
				continue
			}
			a := j.at(d, f.A.Path)
			fd := scanners.At(&a, ruleLicenseRestricted, 0, fmt.Sprintf(
				"%s in %s %s licensed %s (from %s): %s. %s",
				count(len(d.models), "model file"), shownDir(dn), isAre(len(d.models)), l, f.From, why, ruleLicenseRestricted.Fix))
			fd.Evidence = "license " + id
			out = append(out, fd)
		}
		if j.modelDir(dn) && !j.hasCard(dn) {
			a := j.at(d, d.models[0])
			fd := scanners.At(&a, ruleCardMissing, 0, fmt.Sprintf(
				"%s holds a model (%s and its config) but no README.md model card: what the model is, how it was trained and its licence are not stated. %s",
				shownDir(dn), path.Base(d.models[0]), ruleCardMissing.Fix))
			fd.Evidence = "no README.md in " + shownDir(dn)
			out = append(out, fd)
		}
	}
	if g := j.t.Properties["hub.gated"]; g != "" {
		out = append(out, j.gatedFinding(g))
	}
	return out
}

func (j *judge) unknownFinding(d *mdir) scanners.Finding {
	a := j.at(d, d.unknown[0])
	why := "no model card, no licence in the file's metadata"
	if c, ok := j.cards[d.dir]; ok {
		card := strings.TrimPrefix(c.A.Path, "/")
		switch {
		case !c.HasMeta:
			why = "its model card " + card + " has no metadata block"
		case c.Raw != "":
			why = fmt.Sprintf("its model card %s says license %q, which names no licence mlwarden can map to SPDX", card, c.Raw)
		default:
			why = "its model card " + card + " has no license field"
		}
	}
	if f, ok := j.meta[d.unknown[0]]; ok && f.Raw != "" {
		why += fmt.Sprintf("; its %s %q names no SPDX licence", f.From, f.Raw)
	}
	if j.whole != nil && j.whole.Raw != "" {
		why += fmt.Sprintf("; %s says %q, which names no SPDX licence", j.whole.From, j.whole.Raw)
	}
	names := d.unknown
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(d.unknown)-5)
	}
	base := make([]string, len(names))
	for i, n := range names {
		base[i] = path.Base(n)
	}
	f := scanners.At(&a, ruleLicenseUnknown, 0, fmt.Sprintf(
		"%s in %s (%s%s) %s no licence: %s. %s",
		count(len(d.unknown), "model file"), shownDir(d.dir), strings.Join(base, ", "), more, hasHave(len(d.unknown)), why, ruleLicenseUnknown.Fix))
	f.Evidence = "no licence"
	return f
}

func (j *judge) gatedFinding(mode string) scanners.Finding {
	a := scanners.Artifact{Target: j.t.Name, TargetKind: j.t.Kind, Path: "README.md"}
	needs := "an account that has accepted the repository's conditions (access is granted at once)"
	if mode == "manual" {
		needs = "an account whose request the authors have approved (manual gate)"
	}
	var more []string
	if fs := j.t.Properties["hub.gate_fields"]; fs != "" {
		more = append(more, "the request form asks for: "+fs)
	}
	if p := j.t.Properties["hub.gate_prompt"]; p != "" {
		more = append(more, fmt.Sprintf("the prompt says: %q", p))
	}
	msg := fmt.Sprintf("%s is a gated repository (%s): downloading it needs %s", j.t.Name, mode, needs)
	if len(more) > 0 {
		msg += "; " + strings.Join(more, "; ")
	}
	f := scanners.At(&a, ruleGated, 0, msg+". "+ruleGated.Fix)
	f.Evidence = "gated: " + mode
	return f
}

// at is where a directory's finding is: the file p (a model file or the
// card), in the directory's layer.
func (j *judge) at(d *mdir, p string) scanners.Artifact {
	if p == "" {
		p = d.models[0]
	}
	return scanners.Artifact{Kind: scanners.ArtifactFile, Target: j.t.Name, TargetKind: j.t.Kind, Path: p, Layer: d.layer}
}

// modelDir reports whether dir is a model directory: it holds a model
// config (markerFiles), or it is the root of a Hub model repository.
func (j *judge) modelDir(dir string) bool {
	if j.markers[dir] {
		return true
	}
	return j.t.Kind == scanners.KindHub && dir == "." && !strings.HasPrefix(j.t.Name, "hf:datasets/") && !strings.HasPrefix(j.t.Name, "hf:spaces/")
}

// hasCard reports whether dir or a directory above it (a repository whose
// card describes its sub-models) has a README.md.
func (j *judge) hasCard(dir string) bool {
	for d := dir; ; d = path.Dir(d) {
		if _, ok := j.cards[d]; ok {
			return true
		}
		if d == "." || d == "/" || d == "" {
			return false
		}
	}
}

// dirOf is p's directory as the judge keys it: an image's absolute paths
// (/models/x.gguf) and a directory's relative ones (models/x.gguf) give the
// same directory, so a model artifact and its files on disk are judged
// alike ("." is the top directory).
func dirOf(p string) string { return path.Dir(strings.TrimPrefix(p, "/")) }

func shownDir(d string) string {
	if d == "." || d == "" {
		return "the top directory"
	}
	return d + "/"
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
