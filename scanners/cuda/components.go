package cuda

import (
	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
)

// frameworkPin is a framework pinned to a version in a declaration
// ("torch==2.4.0+cu121", "jax[cuda12]==0.4.30").
var frameworkPin = lazyregexp.New(`^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*===?\s*([0-9][^\s;,]*)`)

// components lists what d declares for the bill of materials: each CUDA
// version (with how it was declared) and each framework pinned in a
// declaration.
func components(a *scanners.Artifact, d Declared) []scanners.Component {
	var out []scanners.Component
	for _, e := range d.Evidence {
		p := e.Path
		if p == "" {
			p = a.Path
		}
		if e.CUDA != "" {
			out = append(out, scanners.Component{Kind: scanners.ComponentCUDA, Name: "CUDA", Version: e.CUDA, Path: p, Line: e.Line,
				Layer: a.Layer, Commit: a.Commit, Properties: map[string]string{"declared-as": e.What}})
		}
		if m := frameworkPin.FindStringSubmatch(e.What); m != nil {
			out = append(out, scanners.Component{Kind: scanners.ComponentFramework, Name: m[1], Version: m[2], Path: p, Line: e.Line,
				Layer: a.Layer, Commit: a.Commit})
		}
	}
	return out
}
