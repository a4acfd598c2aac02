package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// imageConfig is the part of an OCI/Docker image config that can hold
// secrets: ENV values, the command, labels, and build arguments that
// history's created_by lines record (RUN |1 HF_TOKEN=... /bin/sh -c ...).
type imageConfig struct {
	Config struct {
		Env        []string          `json:"Env"`
		Cmd        []string          `json:"Cmd"`
		Entrypoint []string          `json:"Entrypoint"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	History []struct {
		CreatedBy string `json:"created_by"`
	} `json:"history"`
}

// scanImageConfig scans an image config's Env, Entrypoint, Cmd, Labels and
// history as the Dockerfile that built it would be read: each part is
// written back as the instruction it came from (ENV NAME=value, LABEL
// key="value", CMD and ENTRYPOINT in exec form with commas, a history entry
// as its instruction — legacy "/bin/sh -c #(nop) ENV …" and "/bin/sh -c …"
// entries, BuildKit's "RUN |2 A=b C=d /bin/sh -c … # buildkit" with its
// build arguments as ARG lines), so that every rule reads the same text a
// Dockerfile gives it: `CMD ["serve", "--api-key", "…"]` from a Dockerfile
// and the image's Cmd array are one finding, not one and none. Findings
// carry no line; the message names the entry.
func (s *Scanner) scanImageConfig(ctx context.Context, a *scanners.Artifact, data []byte) []scanners.Finding {
	var ic imageConfig
	if err := json.Unmarshal(data, &ic); err != nil {
		// Not the JSON we know: scan it as text.
		return s.scanText(ctx, a, data, 1)
	}
	text, where := dockerfileOf(&ic)
	gfs := s.detect(ctx, a, []byte(text), 1)
	return s.convert(a, gfs, func(f engine.Finding) (int, string) {
		if i := f.StartLine - 1; i >= 0 && i < len(where) {
			return 0, where[i]
		}
		return 0, "in the image config"
	}, around{text: []byte(text), first: 1})
}

// dockerfileOf writes an image config back as Dockerfile instructions, and
// for each line the phrase that says where it came from.
func dockerfileOf(ic *imageConfig) (string, []string) {
	var b strings.Builder
	var where []string
	add := func(text, place string) {
		for _, l := range strings.Split(text, "\n") {
			b.WriteString(l)
			b.WriteByte('\n')
			where = append(where, place)
		}
	}
	for _, e := range ic.Config.Env {
		name, _, _ := strings.Cut(e, "=")
		add("ENV "+e, fmt.Sprintf("in the image's environment (ENV %s)", name))
	}
	if len(ic.Config.Entrypoint) > 0 {
		add("ENTRYPOINT "+execForm(ic.Config.Entrypoint), "in the image's ENTRYPOINT")
	}
	if len(ic.Config.Cmd) > 0 {
		add("CMD "+execForm(ic.Config.Cmd), "in the image's CMD")
	}
	keys := make([]string, 0, len(ic.Config.Labels))
	for k := range ic.Config.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, _ := json.Marshal(ic.Config.Labels[k])
		add("LABEL "+k+"="+string(v), fmt.Sprintf("in the image's label %s", k))
	}
	for i, h := range ic.History {
		add(historyInstructions(h.CreatedBy), fmt.Sprintf("in the image's build history (step %d: an ENV, ARG or RUN argument, kept in every copy of the image)", i))
	}
	return b.String(), where
}

// execForm writes a command as a Dockerfile's exec form: a JSON array.
func execForm(args []string) string {
	b, err := json.Marshal(args)
	if err != nil {
		return strings.Join(args, " ")
	}
	return strings.ReplaceAll(string(b), `","`, `", "`)
}

// buildArgsRe is the build arguments BuildKit and the legacy builder put in
// front of a RUN's shell: "|2 A=b C=d ".
var buildArgsRe = lazyregexp.New(`^\|(\d+)\s+`)

// historyInstructions turns a history entry's created_by into the
// Dockerfile instructions it stands for.
func historyInstructions(createdBy string) string {
	s := strings.TrimSpace(createdBy)
	s = strings.TrimSpace(strings.TrimSuffix(s, "# buildkit"))
	run := false
	if rest, ok := strings.CutPrefix(s, "RUN "); ok {
		s, run = strings.TrimSpace(rest), true
	}
	var args []string
	if m := buildArgsRe.FindStringSubmatch(s); m != nil {
		n := 0
		fmt.Sscan(m[1], &n)
		f := strings.Fields(s[len(m[0]):])
		n = min(n, len(f))
		for _, a := range f[:n] {
			args = append(args, "ARG "+a)
		}
		s, run = strings.Join(f[n:], " "), true
	}
	for _, sh := range []string{"/bin/sh -c ", "/bin/bash -c ", "/bin/bash -o pipefail -c ", "cmd /S /C "} {
		if rest, ok := strings.CutPrefix(s, sh); ok {
			s, run = strings.TrimSpace(rest), true
			break
		}
	}
	if rest, ok := strings.CutPrefix(s, "#(nop)"); ok {
		// The legacy builder's metadata step: the instruction itself.
		s, run = strings.TrimSpace(rest), false
	}
	switch {
	case run:
		s = "RUN " + s
	default:
		// BuildKit's and the legacy builder's CMD ["a" "b"]: exec form with
		// commas, as in the Dockerfile.
		if inst, rest, ok := strings.Cut(s, " "); ok && (inst == "CMD" || inst == "ENTRYPOINT" || inst == "SHELL") {
			rest = strings.TrimSpace(rest)
			if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
				if words := quotedRe.FindAllString(rest, -1); len(words) > 0 {
					s = inst + " [" + strings.Join(words, ", ") + "]"
				}
			}
		}
	}
	return strings.Join(append(args, s), "\n")
}

// quotedRe is a double-quoted string with escapes.
var quotedRe = lazyregexp.New(`"(?:[^"\\]|\\.)*"`)
