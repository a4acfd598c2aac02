package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zricethezav/gitleaks/v8/report"

	"github.com/mlwarden/mlwarden/scanners"
)

// imageConfig is the part of an OCI/Docker image config that can hold
// secrets: ENV values, and build arguments that history's created_by lines
// record (RUN |1 HF_TOKEN=... /bin/sh -c ...).
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

// scanImageConfig scans an image config's Env, Cmd, Entrypoint, Labels and
// history. Findings carry no line; the message names the entry.
func (s *Scanner) scanImageConfig(ctx context.Context, a *scanners.Artifact, data []byte) []scanners.Finding {
	var ic imageConfig
	if err := json.Unmarshal(data, &ic); err != nil {
		// Not the JSON we know: scan it as text.
		return s.scanText(ctx, a, data, 1)
	}
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
		add(e, fmt.Sprintf("in the image's environment (ENV %s)", name))
	}
	if len(ic.Config.Entrypoint) > 0 {
		add(strings.Join(ic.Config.Entrypoint, " "), "in the image's ENTRYPOINT")
	}
	if len(ic.Config.Cmd) > 0 {
		add(strings.Join(ic.Config.Cmd, " "), "in the image's CMD")
	}
	for k, v := range ic.Config.Labels {
		add(k+"="+v, fmt.Sprintf("in the image's label %s", k))
	}
	for i, h := range ic.History {
		add(h.CreatedBy, fmt.Sprintf("in the image's build history (step %d: an ENV, ARG or RUN argument, kept in every copy of the image)", i))
	}
	gfs := s.detect(ctx, a, []byte(b.String()), 1)
	fs := s.convert(a, gfs, func(f report.Finding) (int, string) {
		if i := f.StartLine - 1; i >= 0 && i < len(where) {
			return 0, where[i]
		}
		return 0, "in the image config"
	}, around{text: []byte(b.String()), first: 1})
	return fs
}
