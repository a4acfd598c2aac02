package pins

import (
	"encoding/json"
	"fmt"
	"strings"
)

// imageConfig is the part of an OCI/Docker image config the check reads.
type imageConfig struct {
	Config struct {
		Labels map[string]string `json:"Labels"`
		Env    []string          `json:"Env"`
	} `json:"config"`
	History []struct {
		CreatedBy  string `json:"created_by"`
		EmptyLayer bool   `json:"empty_layer"`
	} `json:"history"`
}

// scanImageConfig checks an image's history (the RUN lines that built it)
// and its base-image labels.
func scanImageConfig(data []byte, r *rep) {
	var c imageConfig
	if err := json.Unmarshal(data, &c); err != nil {
		r.add(ruleUnparsed, 0, "", fmt.Sprintf("image config could not be parsed as JSON (%v), so its history and labels were not checked for pins", err))
		return
	}
	if base := c.Config.Labels["org.opencontainers.image.base.name"]; base != "" && c.Config.Labels["org.opencontainers.image.base.digest"] == "" {
		r.image(0, "base image (label org.opencontainers.image.base.name)", base, false)
	}
	for _, e := range c.Config.Env {
		name, val, _ := strings.Cut(e, "=")
		envExtraIndex(r, name, val, 0)
	}
	st := newShellState()
	for i, h := range c.History {
		cmd, ok := historyCommand(h.CreatedBy)
		if !ok {
			continue
		}
		sc := &shellScan{st: st, r: r.sub(0, fmt.Sprintf("image history entry %d: %s", i, shorten(cmd))), src: []byte(cmd), dockerfile: true}
		sc.run()
	}
	st.finish()
}

// historyCommand extracts the shell command from a history entry's
// created_by: "/bin/sh -c pip install x" (docker build), "RUN /bin/sh -c …
// # buildkit" and "RUN |2 A=b C=d /bin/sh -c …" (BuildKit with build args).
// Metadata steps (#(nop), ENV, LABEL, COPY...) are skipped.
func historyCommand(s string) (string, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, "# buildkit")
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "RUN "); ok {
		s = strings.TrimSpace(rest)
		if strings.HasPrefix(s, "|") { // |N ARG=val ...
			f := strings.Fields(s)
			if len(f) > 0 {
				n := 0
				fmt.Sscanf(f[0], "|%d", &n)
				if n+1 <= len(f) {
					s = strings.Join(f[n+1:], " ")
				}
			}
		}
	} else if !strings.HasPrefix(s, "/bin/sh -c") && !strings.HasPrefix(s, "/bin/bash -c") && !strings.HasPrefix(s, "|") {
		return "", false // COPY, ADD, ENV, ... from BuildKit
	}
	for _, p := range []string{"/bin/sh -c ", "/bin/bash -c ", "/bin/bash -o pipefail -c "} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			s = rest
			break
		}
	}
	if strings.HasPrefix(s, "#(nop)") || s == "" {
		return "", false
	}
	return s, true
}

// scanApptainerDef checks an Apptainer/Singularity definition file: the
// From: header when Bootstrap is docker, and the %post section as shell.
func scanApptainerDef(data []byte, r *rep) {
	lines := strings.Split(string(data), "\n")
	bootstrap := ""
	section, start := "", 0
	var body []string
	flush := func() {
		if section == "post" || section == "setup" {
			st := newShellState()
			sc := &shellScan{st: st, r: r.sub(start, ""), src: []byte(strings.Join(body, "\n"))}
			sc.run()
			st.finish()
		}
		body = nil
	}
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "%") {
			flush()
			section, start = strings.ToLower(strings.Fields(t[1:] + " ")[0]), i+2
			continue
		}
		if section != "" {
			body = append(body, l)
			continue
		}
		k, v, ok := strings.Cut(t, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "bootstrap":
			bootstrap = strings.ToLower(strings.TrimSpace(v))
		case "from":
			if bootstrap == "docker" || bootstrap == "oras" {
				r.imageNoTag(i+1, "Apptainer From:", strings.TrimSpace(v), strings.Contains(v, "{{"), false)
			}
		}
	}
	flush()
}
