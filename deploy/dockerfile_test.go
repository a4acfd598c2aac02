// Package deploy_test checks the integration files at the repository root
// and in deploy/ that no Go code reads: the Dockerfile and the release
// configuration that builds it, the pre-commit hook, and the GitHub Action.
// No Docker engine, pre-commit or GitHub runner is needed: each file is
// parsed with the parser its consumer uses (BuildKit's for the Dockerfile)
// or run the way its consumer runs it.
package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"go.yaml.in/yaml/v3"

	"github.com/mlwarden/mlwarden/scanners/scan"
)

// root is the repository root, seen from this package's directory.
const root = ".."

var digestRef = regexp.MustCompile(`^([a-z0-9.-]+(:[0-9]+)?/)?[a-z0-9._-]+(/[a-z0-9._-]+)*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)

// stage is one FROM of a Dockerfile with what the test looks at.
type stage struct {
	base, name string
	line       int
	user       string
	env        map[string]string
	labels     map[string]string
	entrypoint []string
	runs       []string
}

// parseDockerfile reads a Dockerfile with BuildKit's parser, as docker
// build does: the global ARGs (before the first FROM) and the stages.
func parseDockerfile(t *testing.T, path string) (map[string]string, []stage) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	args := map[string]string{}
	var stages []stage
	for _, n := range res.AST.Children {
		var words []string
		for w := n.Next; w != nil; w = w.Next {
			words = append(words, w.Value)
		}
		cur := func() *stage {
			if len(stages) == 0 {
				return nil
			}
			return &stages[len(stages)-1]
		}
		switch strings.ToUpper(n.Value) {
		case "ARG":
			if cur() == nil {
				for _, w := range words {
					k, v, _ := strings.Cut(w, "=")
					args[k] = v
				}
			}
		case "FROM":
			s := stage{base: words[0], line: n.StartLine, env: map[string]string{}, labels: map[string]string{}}
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				s.name = words[2]
			}
			stages = append(stages, s)
		case "USER":
			cur().user = words[0]
		case "ENV", "LABEL":
			// BuildKit gives KEY VALUE "=" triples.
			into := cur().env
			if strings.EqualFold(n.Value, "LABEL") {
				into = cur().labels
			}
			for i := 0; i+1 < len(words); i += 3 {
				into[words[i]] = strings.Trim(words[i+1], `"`)
			}
		case "ENTRYPOINT":
			if n.Attributes["json"] {
				cur().entrypoint = words
			}
		case "RUN":
			cur().runs = append(cur().runs, strings.Join(words, " "))
		}
	}
	return args, stages
}

func TestDockerfile(t *testing.T) {
	path := filepath.Join(root, "Dockerfile")
	args, stages := parseDockerfile(t, path)
	if len(stages) < 2 {
		t.Fatalf("%s: %d stages, want a multi-stage build", path, len(stages))
	}
	names := map[string]bool{"scratch": true}
	for _, s := range stages {
		base := s.base
		if m := regexp.MustCompile(`^\$\{?(\w+)\}?$`).FindStringSubmatch(base); m != nil {
			// FROM ${ARG}: the ARG's default must name an earlier stage.
			base = args[m[1]]
		}
		switch {
		case names[base]:
		case strings.Contains(base, ":latest"), !digestRef.MatchString(base):
			t.Errorf("%s:%d: FROM %s is not pinned by tag and digest", path, s.line, s.base)
		}
		if s.name != "" {
			names[s.name] = true
		}
	}

	final := stages[len(stages)-1]
	if final.name != "" && slices.ContainsFunc(stages[:len(stages)-1], func(s stage) bool { return s.base == final.name }) {
		t.Errorf("%s: the last stage is not the image", path)
	}
	if u, _, _ := strings.Cut(final.user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("%s: the image runs as %q, want a non-root numeric user", path, final.user)
	}
	if len(final.entrypoint) != 1 || !strings.HasSuffix(final.entrypoint[0], "/mlwarden") {
		t.Errorf("%s: ENTRYPOINT %q, want the mlwarden binary in exec form", path, final.entrypoint)
	}
	for _, l := range []string{"title", "description", "source", "licenses", "version", "revision", "base.name", "base.digest"} {
		if final.labels["org.opencontainers.image."+l] == "" {
			t.Errorf("%s: no label org.opencontainers.image.%s", path, l)
		}
	}
	if !strings.HasSuffix(final.base, "@"+final.labels["org.opencontainers.image.base.digest"]) ||
		!strings.HasPrefix(final.base, final.labels["org.opencontainers.image.base.name"]+"@") {
		t.Errorf("%s: base.name/base.digest labels do not name FROM %s", path, final.base)
	}

	// The source stage builds a static binary.
	built := false
	for _, s := range stages {
		for _, r := range s.runs {
			if strings.Contains(r, "go build") {
				built = true
				if s.env["CGO_ENABLED"] != "0" || !strings.Contains(r, "-trimpath") {
					t.Errorf("%s: go build without CGO_ENABLED=0 and -trimpath: %s", path, r)
				}
			}
		}
	}
	if !built {
		t.Errorf("%s: no stage runs go build", path)
	}

	// The release builds the same file with BINARY naming a stage.
	var gr struct {
		Builds []struct {
			ID  string   `yaml:"id"`
			Env []string `yaml:"env"`
		} `yaml:"builds"`
		Dockers []struct {
			IDs        []string          `yaml:"ids"`
			Dockerfile string            `yaml:"dockerfile"`
			Tags       []string          `yaml:"tags"`
			BuildArgs  map[string]string `yaml:"build_args"`
		} `yaml:"dockers_v2"`
	}
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &gr); err != nil {
		t.Fatal(err)
	}
	if len(gr.Dockers) == 0 {
		t.Fatal(".goreleaser.yaml: no dockers_v2 image")
	}
	for _, d := range gr.Dockers {
		if d.Dockerfile != "Dockerfile" {
			t.Errorf(".goreleaser.yaml: image built from %q, not the Dockerfile tested here", d.Dockerfile)
		}
		if b := d.BuildArgs["BINARY"]; !names[b] || b == args["BINARY"] {
			t.Errorf(".goreleaser.yaml: build arg BINARY=%q names no stage other than the default %q", b, args["BINARY"])
		}
		for _, tag := range d.Tags {
			if strings.Contains(tag, "latest") {
				t.Errorf(".goreleaser.yaml: image tag %q", tag)
			}
		}
		for _, id := range d.IDs {
			for _, b := range gr.Builds {
				if b.ID == id && !slices.Contains(b.Env, "CGO_ENABLED=0") {
					t.Errorf(".goreleaser.yaml: build %s for the image is not static", id)
				}
			}
		}
	}

	// mlwarden's own checks pass it: pins (digests) and misconfig.
	s, err := scan.New(scan.Options{Checks: []string{"pins", "misconfig", "secrets"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), scan.Target{Ref: path}, scan.Target{Ref: filepath.Join(root, ".goreleaser.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Findings {
		t.Errorf("%s:%d: %s: %s", f.Path, f.Line, f.RuleID, f.Message)
	}
	for _, e := range res.Errors {
		t.Errorf("%s: %s", e.Path, e.Message)
	}
}

// TestDockerfileUnpinned makes sure the test above can fail: the same
// parser and rules on a Dockerfile with a tag-only base.
func TestDockerfileUnpinned(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "Dockerfile")
	if err := os.WriteFile(p, []byte("ARG B=build\nFROM golang:1.26 AS build\nFROM ${B} AS bin\nFROM gcr.io/distroless/static:nonroot\nUSER 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, stages := parseDockerfile(t, p)
	if args["B"] != "build" || len(stages) != 3 || stages[1].base != "${B}" || stages[2].user != "0" {
		t.Fatalf("parsed %v %+v", args, stages)
	}
	for _, s := range []string{stages[0].base, stages[2].base} {
		if digestRef.MatchString(s) {
			t.Errorf("%s counted as pinned", s)
		}
	}
	if !digestRef.MatchString("golang:1.26.4@sha256:" + strings.Repeat("ab", 32)) {
		t.Error("a tag@digest reference not counted as pinned")
	}
}
