package pins

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners"
)

// isHelmValues reports whether p names a Helm chart's values file
// (values.yaml, values-gpu.yaml, values.prod.yml): the images a chart
// deploys are set there, split into repository, tag and digest.
func isHelmValues(p string) bool {
	base := strings.ToLower(scanners.Base(p))
	ext := path.Ext(base)
	if ext != ".yaml" && ext != ".yml" {
		return false
	}
	stem := strings.TrimSuffix(base, ext)
	return stem == "values" || strings.HasPrefix(stem, "values-") || strings.HasPrefix(stem, "values.") || strings.HasPrefix(stem, "values_")
}

// isKustomization reports whether p names a kustomization file.
func isKustomization(p string) bool {
	switch strings.ToLower(scanners.Base(p)) {
	case "kustomization.yaml", "kustomization.yml", "kustomization":
		return true
	}
	return false
}

// helmValues walks a values file and checks every image it sets: a key
// named image (or ending in Image: initImage, sidecarImage) holding either a
// reference or the common {registry, repository, tag, digest} map.
func (y *yamlScan) helmValues(n *yaml.Node, where string, depth int) {
	n = deref(n)
	if n == nil || depth > 64 || !y.spend() {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, deref(n.Content[i+1])
			at := k
			if where != "" {
				at = where + "." + k
			}
			if lk := strings.ToLower(k); lk == "image" || strings.HasSuffix(lk, "image") {
				if y.helmImage(v, at) {
					continue
				}
			}
			y.helmValues(v, at, depth+1)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			y.helmValues(c, where+"["+strconv.Itoa(i)+"]", depth+1)
		}
	}
}

// helmImage checks one image value at the values path at; it returns false
// when the value is not an image (a map without repository, a flag).
func (y *yamlScan) helmImage(v *yaml.Node, at string) bool {
	what := fmt.Sprintf("Helm value %s", at)
	switch v.Kind {
	case yaml.ScalarNode:
		if !looksLikeImage(v) {
			return false
		}
		y.image(v, what)
		return true
	case yaml.MappingNode:
		repo := scalar(mapGet(v, "repository"))
		if repo == "" {
			repo = scalar(mapGet(v, "name")) // some charts: image.name
		}
		if repo == "" {
			return false
		}
		if reg := scalar(mapGet(v, "registry")); reg != "" {
			repo = strings.TrimSuffix(reg, "/") + "/" + repo
		}
		tagNode := mapGet(v, "tag")
		tag, digest := scalar(tagNode), scalar(mapGet(v, "digest"))
		line := deref(mapGet(v, "repository")).Line
		if line == 0 {
			line = v.Line
		}
		switch {
		case digest != "" || strings.Contains(tag, "@sha256:"):
			// Pinned (the digest wins over the tag in common charts).
		case tag == "":
			y.r.add(ruleImageNotDigest, line, repo, fmt.Sprintf(
				"%s (%s) has no tag or digest, so the chart's appVersion picks the tag and whoever can push it decides what runs; set %s.digest: sha256:<digest> (or tag: <version>@sha256:<digest>)", what, repo, at))
		default:
			if tagNode != nil {
				line = deref(tagNode).Line
			}
			y.splitImage(line, what, repo+":"+tag, fmt.Sprintf("set %s.digest: sha256:<digest> where the chart supports it, or %s.tag: %s@sha256:<digest>", at, at, tag))
		}
		return true
	}
	return false
}

// looksLikeImage tells an image reference from the flags and numbers that
// keys ending in "image" also hold (useImage: true).
func looksLikeImage(n *yaml.Node) bool {
	if n.Tag != "" && n.Tag != "!!str" {
		return false
	}
	v := n.Value
	if v == "" || strings.ContainsAny(v, " \t\n") {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "null", "~":
		return false
	}
	return strings.ContainsAny(v, "/:@") || !strings.ContainsAny(v, ".")
}

// kustomize checks the images: overrides of a kustomization: an entry with
// newTag and no digest pins by tag only (an entry with neither keeps the
// base manifests' reference, which is checked where it is written).
func (y *yamlScan) kustomize(d *yaml.Node) {
	imgs := mapGet(d, "images")
	if imgs == nil || imgs.Kind != yaml.SequenceNode {
		return
	}
	for _, e := range imgs.Content {
		name := scalar(mapGet(e, "newName"))
		if name == "" {
			name = scalar(mapGet(e, "name"))
		}
		tagNode := mapGet(e, "newTag")
		tag := scalar(tagNode)
		if name == "" || tag == "" || scalar(mapGet(e, "digest")) != "" {
			continue
		}
		y.splitImage(deref(tagNode).Line, "kustomize image override", name+":"+tag,
			fmt.Sprintf("add digest: sha256:<digest> to this images: entry (kustomize edit set image %s=%s@sha256:<digest>)", scalar(mapGet(e, "name")), name))
	}
}

// splitImage reports an image whose name and tag are written in separate
// fields (Helm values, kustomize overrides), with fix saying which field
// takes the digest: mlwarden pin rewrites whole references only.
func (y *yamlScan) splitImage(line int, what, ref, fix string) {
	switch dockerImage(ref, false) {
	case imageLatest:
		y.r.add(ruleImageLatest, line, ref, fmt.Sprintf("%s %q uses :latest, so every pull may get a different image; pin a release: %s", what, ref, fix))
	case imageTag:
		y.r.add(ruleImageNotDigest, line, ref, fmt.Sprintf("%s %q is referenced by tag, not digest: whoever can push the tag decides what runs; %s", what, ref, fix))
	case imageVariable:
		y.r.add(ruleImageVariable, line, ref, fmt.Sprintf("%s %q is built from a variable, so the caller decides what runs; %s", what, ref, fix))
	}
}

// scalar returns a scalar node's value, or "".
func scalar(n *yaml.Node) string {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}
