package pins

import (
	"fmt"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// yamlFlavor is which kind of YAML file an artifact is.
type yamlFlavor int

const (
	yamlGeneric yamlFlavor = iota // Kubernetes manifests and Compose files, told per document
	yamlGitHub                    // GitHub Actions workflows and composite actions
	yamlGitLab                    // GitLab CI
)

func flavorOf(a *scanners.Artifact) yamlFlavor {
	p := strings.ToLower(a.Path)
	base := scanners.Base(a.Path)
	switch {
	case strings.Contains(p, ".github/workflows/") || base == "action.yml" || base == "action.yaml":
		return yamlGitHub
	case strings.Contains(base, "gitlab-ci"):
		return yamlGitLab
	}
	return yamlGeneric
}

// containerKeys hold lists of containers in Kubernetes pod specs (and Argo's
// sidecars); containerMaps hold one container.
var containerKeys = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true, "sidecars": true}

// scanYAML checks Kubernetes manifests (any kind: the pod templates of
// Deployments, Jobs, CronJobs, PyTorchJobs, MPIJobs, RayClusters and RayJobs
// all hold containers lists), Helm values files, kustomizations, Compose
// files, GitHub Actions workflows and GitLab CI files.
func scanYAML(a *scanners.Artifact, data []byte, r *rep) {
	docs, err := yamlDocs(data)
	if err != nil {
		if strings.Contains(string(data), "{{") {
			return // a Helm or Jinja template: not YAML until rendered
		}
		r.add(ruleUnparsed, yamlErrLine(err, data), "", fmt.Sprintf("YAML could not be parsed (%v), so its images and commands were not checked for pins; fix the syntax", err))
		return
	}
	y := &yamlScan{r: r, budget: maxYAMLNodes}
	switch flavorOf(a) {
	case yamlGitHub:
		for _, d := range docs {
			y.github(d, 0)
		}
		y.finish()
	case yamlGitLab:
		for _, d := range docs {
			y.gitlab(d)
		}
		y.finish()
	default:
		for _, d := range docs {
			y.document(a, d)
		}
	}
}

// document checks one document of a YAML file that is not a CI workflow,
// telling its kind from the file name and its keys.
func (y *yamlScan) document(a *scanners.Artifact, d *yaml.Node) {
	switch {
	case isKustomization(a.Path) || scalar(mapGet(d, "kind")) == "Kustomization":
		y.kustomize(d)
	case isHelmValues(a.Path):
		y.helmValues(d, "", 0)
	case mapGet(d, "apiVersion") != nil && mapGet(d, "kind") != nil:
		y.kube(d, "", 0)
	case mapGet(d, "services") != nil && mapGet(d, "services").Kind == yaml.MappingNode:
		y.compose(d)
	}
}

type yamlScan struct {
	r      *rep
	env    map[string]string
	budget int
	st     *shellState
	// onImage, when set, learns each literal image scalar (for Rewrite);
	// prefix is what precedes the reference in the scalar ("docker://").
	onImage func(n *yaml.Node, prefix string)
	// onAction, when set, learns each uses: not pinned to a commit.
	onAction func(n *yaml.Node, name, ref string)
}

func (y *yamlScan) spend() bool {
	y.budget--
	return y.budget > 0
}

func (y *yamlScan) image(n *yaml.Node, what string) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		return
	}
	ref, dyn := expandVars(n.Value, y.env)
	y.r.image(n.Line, what, ref, dyn)
	if y.onImage != nil && ref == n.Value {
		y.onImage(n, "")
	}
}

// kube walks a manifest and checks every container's image.
func (y *yamlScan) kube(n *yaml.Node, key string, depth int) {
	n = deref(n)
	if n == nil || depth > 64 || !y.spend() {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		if containerKeys[key] {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, deref(n.Content[i+1])
			if k == "<<" {
				y.kube(v, "", depth+1)
				continue
			}
			if containerKeys[k] && v.Kind == yaml.SequenceNode {
				for _, c := range v.Content {
					y.image(mapGet(c, "image"), "container image")
				}
				continue
			}
			if (k == "container" || k == "script") && v.Kind == yaml.MappingNode {
				y.image(mapGet(v, "image"), "container image") // Argo templates
			}
			if k == "volumes" && v.Kind == yaml.SequenceNode {
				// Image volumes (volumes[].image.reference): models mounted
				// from OCI artifacts, pinned as container images are.
				for _, vol := range v.Content {
					if img := mapGet(vol, "image"); img != nil && img.Kind == yaml.MappingNode {
						y.image(mapGet(img, "reference"), "image volume")
					}
				}
			}
			y.kube(v, k, depth+1)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			y.kube(c, key, depth+1)
		}
	}
}

// compose checks services.*.image in a Compose file.
func (y *yamlScan) compose(d *yaml.Node) {
	svcs := mapGet(d, "services")
	for i := 0; i+1 < len(svcs.Content); i += 2 {
		y.image(mapGet(svcs.Content[i+1], "image"), "service image")
	}
}

// shell checks a run:/script: text held in a scalar node.
func (y *yamlScan) shell(n *yaml.Node) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		return
	}
	if y.st == nil {
		y.st = newShellState()
	}
	first := n.Line
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		first++ // a block scalar starts on the line after its indicator
	}
	sc := &shellScan{st: y.st, r: y.r.sub(first, ""), src: maskCIExpressions(n.Value)}
	sc.run()
}

// ciExpr is a GitHub Actions expression, ${{ … }}, which the runner
// substitutes before the shell sees the script.
var ciExpr = lazyregexp.New(`\$\{\{[^}\n]*\}\}`)

// maskCIExpressions turns each ${{ … }} into a shell parameter expansion of
// the same length (${GH___}), so that the script parses, offsets and lines
// stay, and a value that comes from the expression counts as a variable.
func maskCIExpressions(script string) []byte {
	return ciExpr.ReplaceAllFunc([]byte(script), func(m []byte) []byte {
		return []byte("${GH" + strings.Repeat("_", len(m)-5) + "}")
	})
}

func (y *yamlScan) finish() {
	if y.st != nil {
		y.st.finish()
	}
}

// github checks uses:, container images and run: scripts in a workflow or
// an action's action.yml: job containers and services (with the values of
// strategy.matrix they take), steps' and jobs' uses: (actions, reusable
// workflows, docker:// images), a Docker action's runs.image, and run:
// scripts in the shell the step runs them in.
func (y *yamlScan) github(n *yaml.Node, depth int) {
	y.githubAt(n, depth, ghContext{})
}

// ghContext is what a workflow's outer levels tell the steps inside: the
// default shell, and the job's matrix.
type ghContext struct {
	shell  string
	matrix map[string][]*yaml.Node
}

func (y *yamlScan) githubAt(n *yaml.Node, depth int, ctx ghContext) {
	n = deref(n)
	if n == nil || depth > 64 || !y.spend() {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		if sh := scalar(mapGet(mapGet(mapGet(n, "defaults"), "run"), "shell")); sh != "" {
			ctx.shell = sh
		} else if ro := mapGet(n, "runs-on"); ro != nil && strings.Contains(strings.ToLower(yamlText(ro)), "windows") && ctx.shell == "" {
			ctx.shell = "pwsh" // the default shell of Windows runners
		}
		job := mapGet(n, "runs-on") != nil || mapGet(n, "steps") != nil && mapGet(n, "using") == nil
		if job {
			if m := matrixValues(mapGet(mapGet(n, "strategy"), "matrix")); m != nil {
				ctx.matrix = m
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, deref(n.Content[i+1])
			switch k {
			case "uses":
				y.action(v)
				continue
			case "run":
				if v != nil && v.Kind == yaml.ScalarNode {
					sh := scalar(mapGet(n, "shell"))
					if sh == "" {
						sh = ctx.shell
					}
					y.runScript(v, sh)
					continue
				}
			case "strategy", "with", "env", "inputs", "outputs", "secrets", "permissions", "concurrency", "on":
				continue // not run, or only through what is judged where it is used
			case "container":
				if !job {
					break
				}
				if v.Kind == yaml.ScalarNode {
					y.ghImage(v, "job container", ctx)
				} else {
					y.ghImage(mapGet(v, "image"), "job container", ctx)
				}
				continue
			case "services":
				if !job {
					break
				}
				if v.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(v.Content); j += 2 {
						y.ghImage(mapGet(v.Content[j+1], "image"), "service container", ctx)
					}
				}
				continue
			case "runs":
				// A Docker action: runs.image is docker://REF or a Dockerfile.
				if img := mapGet(v, "image"); img != nil && strings.EqualFold(scalar(mapGet(v, "using")), "docker") {
					if ref, ok := strings.CutPrefix(strings.TrimSpace(img.Value), "docker://"); ok {
						y.r.image(img.Line, "Docker action image", ref, strings.Contains(ref, "${{"))
						if y.onImage != nil && !strings.Contains(ref, "${{") {
							y.onImage(img, "docker://")
						}
					}
				}
			}
			y.githubAt(v, depth+1, ctx)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			y.githubAt(c, depth+1, ctx)
		}
	}
}

// runScript checks a run: script in the shell that runs it: bash and sh
// (the default) as shell, pwsh and powershell line by line; cmd and
// python are not read.
func (y *yamlScan) runScript(v *yaml.Node, shell string) {
	sh := strings.ToLower(strings.Fields(shell + " bash")[0])
	switch sh {
	case "bash", "sh", "{0}":
		y.shell(v)
	case "pwsh", "powershell":
		first := v.Line
		if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			first++
		}
		if y.st == nil {
			y.st = newShellState()
		}
		scanPowerShell(string(maskCIExpressions(v.Value)), y.r.sub(first, ""), y.st)
	default:
		if strings.Contains(sh, "bash") || strings.HasSuffix(sh, "/sh") {
			y.shell(v)
		}
	}
}

// yamlText is a node's scalars joined, for tests of its content.
func yamlText(n *yaml.Node) string {
	n = deref(n)
	if n == nil {
		return ""
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var parts []string
	for _, c := range n.Content {
		parts = append(parts, yamlText(c))
	}
	return strings.Join(parts, " ")
}

// matrixValues reads strategy.matrix: each key's scalar values, from its
// list and from include: entries, with the nodes they are written at.
// A matrix given by an expression (fromJSON(…)) has none.
func matrixValues(m *yaml.Node) map[string][]*yaml.Node {
	m = deref(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	out := map[string][]*yaml.Node{}
	add := func(k string, v *yaml.Node) {
		v = deref(v)
		if v == nil {
			return
		}
		switch v.Kind {
		case yaml.ScalarNode:
			out[k] = append(out[k], v)
		case yaml.SequenceNode:
			for _, c := range v.Content {
				if c = deref(c); c != nil && c.Kind == yaml.ScalarNode {
					out[k] = append(out[k], c)
				}
			}
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i].Value, deref(m.Content[i+1])
		switch k {
		case "exclude":
		case "include":
			if v == nil || v.Kind != yaml.SequenceNode {
				continue
			}
			for _, e := range v.Content {
				if e = deref(e); e != nil && e.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(e.Content); j += 2 {
						add(e.Content[j].Value, e.Content[j+1])
					}
				}
			}
		default:
			add(k, v)
		}
	}
	return out
}

// ghExpr is a whole-value GitHub expression, ${{ … }}.
var ghExpr = lazyregexp.New(`^\$\{\{\s*(.*?)\s*\}\}$`)

// ghLiteral is a string literal inside an expression.
var ghLiteral = lazyregexp.New(`'((?:[^']|'')*)'`)

// ghMatrixRef is matrix.KEY (or matrix['KEY']) inside an expression.
var ghMatrixRef = lazyregexp.New(`\bmatrix(?:\.([A-Za-z_][A-Za-z0-9_-]*)|\[\s*'([^']+)'\s*\])`)

// ghImage judges a job or service container image. A value that is an
// expression is judged by what it can be: the matrix values it names, at
// the lines they are written, and the string literals in it
// (${{ cond && 'img@sha256:…' || ” }}); anything else (inputs, vars) is
// a variable.
func (y *yamlScan) ghImage(n *yaml.Node, what string, ctx ghContext) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	v := strings.TrimSpace(n.Value)
	m := ghExpr.FindStringSubmatch(v)
	if m == nil {
		y.image(n, what)
		return
	}
	expr := m[1]
	judged := false
	for _, ref := range ghMatrixRef.FindAllStringSubmatch(expr, -1) {
		key := ref[1] + ref[2]
		vals, ok := ctx.matrix[key]
		if !ok {
			continue
		}
		judged = true
		for _, val := range vals {
			if strings.TrimSpace(val.Value) != "" {
				y.image(val, what+" (strategy.matrix."+key+")")
			}
		}
	}
	for _, lit := range ghLiteral.FindAllStringSubmatch(expr, -1) {
		ref := strings.ReplaceAll(lit[1], "''", "'")
		if ref == "" || strings.ContainsAny(ref, " =") {
			continue // '' (no container), or a comparison's operand
		}
		if isComparedLiteral(expr, lit[0]) {
			continue
		}
		judged = true
		if strings.Contains(ref, "@sha256:") {
			continue // pinned by digest (the hex is the author's to fill)
		}
		y.r.image(n.Line, what, ref, false)
	}
	if !judged {
		y.r.image(n.Line, what, v, true)
	}
}

// isComparedLiteral reports whether lit appears in expr as an operand of
// == or != (inputs.x == 'true'), which is not a value the expression
// yields.
func isComparedLiteral(expr, lit string) bool {
	i := strings.Index(expr, lit)
	if i < 0 {
		return false
	}
	before := strings.TrimSpace(expr[:i])
	after := strings.TrimSpace(expr[i+len(lit):])
	return strings.HasSuffix(before, "==") || strings.HasSuffix(before, "!=") ||
		strings.HasPrefix(after, "==") || strings.HasPrefix(after, "!=")
}

// action checks one uses: value: an action at a ref, a reusable workflow
// (owner/repo/.github/workflows/x.yml@ref) or a docker:// image. Local
// actions and workflows (./path, and the $/path form that names the
// repository's own) are fine.
func (y *yamlScan) action(n *yaml.Node) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	// A block scalar (uses: |) keeps its trailing newline.
	v := strings.TrimSpace(n.Value)
	switch {
	case v == "" || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "$/"):
		return // in this repository
	case strings.HasPrefix(v, "docker://"):
		y.r.image(n.Line, "action image", strings.TrimPrefix(v, "docker://"), strings.Contains(v, "${{"))
		if y.onImage != nil && !strings.Contains(v, "${{") {
			y.onImage(n, "docker://")
		}
		return
	}
	name, ref, ok := strings.Cut(v, "@")
	if ok && isHex(ref, 40) {
		return
	}
	if y.onAction != nil {
		y.onAction(n, name, ref)
	}
	what := "action " + name
	if strings.Contains(name, "/.github/workflows/") {
		what = "reusable workflow " + name
	}
	msg := fmt.Sprintf("%s is used at %q, a tag or branch its owner (or whoever takes over the account) can move to other code; pin the commit and keep the tag as a comment: uses: %s@<40-hex sha> # %s (mlwarden pin FILE resolves it)", what, ref, name, ref)
	if !ok {
		msg = fmt.Sprintf("%s is used with no ref at all; pin the commit: uses: %s@<40-hex sha> # vX.Y.Z", what, name)
	}
	y.r.add(ruleActionNotSHA, n.Line, v, msg)
}

// gitlabReserved are top-level GitLab CI keys that are not jobs.
var gitlabReserved = map[string]bool{
	"stages": true, "variables": true, "include": true, "workflow": true, "cache": true, "spec": true,
}

// gitlab checks image:, services: and script lines of a GitLab CI file.
func (y *yamlScan) gitlab(d *yaml.Node) {
	if d.Kind != yaml.MappingNode {
		return
	}
	y.env = map[string]string{}
	if vars := mapGet(d, "variables"); vars != nil && vars.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(vars.Content); i += 2 {
			v := deref(vars.Content[i+1])
			if v.Kind == yaml.MappingNode {
				v = mapGet(v, "value")
			}
			if v != nil && v.Kind == yaml.ScalarNode {
				y.env[vars.Content[i].Value] = v.Value
			}
		}
	}
	y.gitlabJob(d)
	for i := 0; i+1 < len(d.Content); i += 2 {
		k := d.Content[i].Value
		if gitlabReserved[k] || k == "image" || k == "services" {
			continue
		}
		if job := deref(d.Content[i+1]); job.Kind == yaml.MappingNode {
			y.gitlabJob(job)
		}
	}
}

func (y *yamlScan) gitlabJob(job *yaml.Node) {
	img := mapGet(job, "image")
	if img != nil && img.Kind == yaml.MappingNode {
		img = mapGet(img, "name")
	}
	y.image(img, "CI image")
	if svcs := mapGet(job, "services"); svcs != nil && svcs.Kind == yaml.SequenceNode {
		for _, s := range svcs.Content {
			s = deref(s)
			if s.Kind == yaml.MappingNode {
				s = mapGet(s, "name")
			}
			y.image(s, "CI service image")
		}
	}
	for _, k := range []string{"before_script", "script", "after_script"} {
		sc := mapGet(job, k)
		if sc == nil {
			continue
		}
		if sc.Kind == yaml.SequenceNode {
			for _, l := range sc.Content {
				l = deref(l)
				if l.Kind == yaml.SequenceNode { // nested lists from !reference or anchors
					for _, m := range l.Content {
						y.shell(m)
					}
					continue
				}
				y.shell(l)
			}
		} else {
			y.shell(sc)
		}
	}
}
