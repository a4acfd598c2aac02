package cuda

import (
	"context"
	"fmt"

	"github.com/mlwarden/mlwarden/scanners"
)

// Read limits: declarations sit in small text files and configs.
const (
	maxConfig = 16 << 20
	maxText   = 8 << 20
)

// Wants says whether an artifact may declare CUDA: an image config, a
// compat library or PyTorch dist-info path, torch/version.py, pip and conda
// files, Dockerfiles and shell or batch scripts.
func (s *Scanner) Wants(a *scanners.Artifact, head []byte) bool {
	return wants(a, head)
}

func wants(a *scanners.Artifact, head []byte) bool {
	switch a.Kind {
	case scanners.ArtifactImageConfig:
		return true
	case scanners.ArtifactFile:
		return classify(a.Path, head) != kindNone
	}
	return false
}

// Extract reads what one artifact declares about CUDA.
func Extract(a *scanners.Artifact, c scanners.Content) (Declared, error) {
	switch a.Kind {
	case scanners.ArtifactImageConfig:
		data, _, err := scanners.ReadAll(c, maxConfig)
		if err != nil {
			return Declared{}, fmt.Errorf("read image config: %w", err)
		}
		d, err := ExtractImageConfig(data)
		d.FromImage = a.TargetKind == scanners.KindImage
		return d, err
	case scanners.ArtifactFile:
	default:
		return Declared{}, nil
	}
	head := make([]byte, min(c.Size(), scanners.HeadSize))
	n, _ := c.ReadAt(head, 0)
	head = head[:n]
	if classify(a.Path, head) == kindPathOnly {
		return ExtractFile(a.Path, nil), nil
	}
	data, _, err := scanners.ReadAll(c, maxText)
	if err != nil {
		return Declared{}, fmt.Errorf("read %s: %w", a.Path, err)
	}
	return ExtractFile(a.Path, data), nil
}

// Scan evaluates one artifact on its own against every host. Facts spread
// over several artifacts of an image (its config and its files) are
// evaluated per artifact here; `mlwarden cuda check` combines them per
// target (TargetCheck).
func (s *Scanner) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	d, err := Extract(a, c)
	if err != nil {
		return nil, err
	}
	scanners.AddComponent(ctx, components(a, d)...) // the bill of materials' CUDA and framework versions
	return s.Findings(a, d), nil
}

// Findings turns a declaration into findings located at a.
func (s *Scanner) Findings(a *scanners.Artifact, d Declared) []scanners.Finding {
	var out []scanners.Finding
	for _, u := range d.Undeclared {
		r := ruleByID(RuleUndeclared)
		f := scanners.At(a, r, u.Line, fmt.Sprintf("%s uses CUDA without saying which version: %s; %s", where(a, u), r.Why, r.Fix))
		f.Evidence = u.What
		out = append(out, f)
	}
	if d.CUDA == "" && d.Env == nil && len(d.CompatDrivers) == 0 {
		return out
	}
	first := firstEvidence(d)
	if len(s.pools) == 0 {
		r := ruleByID(RuleNoHostFacts)
		f := scanners.At(a, r, first.Line, fmt.Sprintf("%s declares CUDA %s (%s), but there are no host facts to check it against (%s); %s",
			where(a, first), orUnknown(d.CUDA), first.What, s.hostNote, r.Fix))
		f.Evidence = first.What
		out = append(out, f)
		return out
	}
	for _, p := range s.pools {
		ev := Evaluate(s.table, d, p.Name, p.Host)
		for _, pr := range ev.Problems {
			r := ruleByID(pr.Rule)
			f := scanners.At(a, r, first.Line, fmt.Sprintf("%s declares CUDA %s (%s); on host %q (driver %s): %s. Fix: %s",
				where(a, first), orUnknown(ev.DeclaredCUDA), first.What, p.Name, p.Host.DriverVersion, pr.Reason, r.Fix))
			f.Evidence = first.What
			out = append(out, f)
		}
	}
	return out
}

func where(a *scanners.Artifact, e Evidence) string {
	if a.Kind == scanners.ArtifactImageConfig {
		return "the image config"
	}
	if e.Path != "" {
		return e.Path
	}
	return a.Path
}

// firstEvidence is the declaration findings point at: the first one that
// names the highest CUDA version, else the first.
func firstEvidence(d Declared) Evidence {
	for _, e := range d.Evidence {
		if e.CUDA != "" && e.CUDA == d.CUDA {
			return e
		}
	}
	if len(d.Evidence) > 0 {
		return d.Evidence[0]
	}
	return Evidence{}
}
