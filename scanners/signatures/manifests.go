package signatures

import (
	"context"
	"fmt"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/signatures/checksums"
)

func (s *Scanner) scanManifest(ctx context.Context, a *scanners.Artifact, data []byte, k *keptState) ([]scanners.Finding, error) {
	entries, lineErrs := checksums.Parse(a.Path, data, checksums.AlgorithmFor(a.Path))
	if len(entries) == 0 {
		// Named like a manifest (x.sha512) but none of it is one: a
		// signature or test data, or a manifest beyond repair. Say so once.
		if len(lineErrs) > 0 {
			return []scanners.Finding{scanners.At(a, RuleMalformed, lineErrs[0].Line, fmt.Sprintf(
				"%s is named like a checksum manifest but none of its lines is a checksum entry (line %d: %s), so nothing is verified by it; if it is a manifest, regenerate it with sha256sum", a.Path, lineErrs[0].Line, lineErrs[0].Msg))}, nil
		}
		return nil, nil
	}
	var out []scanners.Finding
	for _, le := range lineErrs {
		out = append(out, scanners.At(a, RuleMalformed, le.Line, fmt.Sprintf(
			"checksum manifest %s line %d cannot be read (%s): the file it names is not verified; regenerate the manifest with sha256sum", a.Path, le.Line, le.Msg)))
	}
	if h, _ := s.hasher(a); h == nil {
		if len(entries) > 0 {
			out = append(out, scanners.At(a, RuleUnverified, 0, fmt.Sprintf(
				"checksum manifest %s (%d entries) was not verified: it lives inside an image or git history, where mlwarden does not follow manifests; run mlwarden verify checksums on the extracted files", a.Path, len(entries))))
		}
		return out, nil
	}
	p := pending{kind: judgeManifest, a: *a, data: data}
	s.prefetch(ctx, &p)
	later, err := s.later(ctx, a, judgeManifest, data, k)
	return append(out, later...), err
}

func manifestFinding(a *scanners.Artifact, r checksums.Result) []scanners.Finding {
	where := fmt.Sprintf("%s (line %d of %s)", r.Name, r.Line, a.Path)
	switch r.Status {
	case checksums.OK:
		return nil
	case checksums.Mismatch:
		return []scanners.Finding{scanners.At(a, RuleChecksum, r.Line, fmt.Sprintf(
			"%s: %s; the file is corrupted or was changed after the manifest was written; download it again and do not load it until it matches", where, r.Reason))}
	case checksums.Missing:
		return []scanners.Finding{scanners.At(a, RuleMissing, r.Line, fmt.Sprintf(
			"%s is listed in the manifest but missing; the release is incomplete; fetch the file and verify again", where))}
	case checksums.Rejected:
		return []scanners.Finding{scanners.At(a, RuleUnsafePath, r.Line, fmt.Sprintf(
			"%s was not read: %s; a manifest may only name files beside or below it, so this entry vouches for nothing (sha256sum -c would follow it)", where, r.Reason))}
	}
	return []scanners.Finding{scanners.At(a, RuleUnverified, r.Line, fmt.Sprintf("%s could not be read to verify it: %s", where, r.Reason))}
}

// lfsPointer reports a small file that is a git-LFS pointer: the content it
// stands for was never fetched.
func lfsPointer(a *scanners.Artifact, c scanners.Content) (scanners.Finding, bool, error) {
	if a.Size >= checksums.LFSPointerMax {
		return scanners.Finding{}, false, nil
	}
	data, _, err := scanners.ReadAll(c, checksums.LFSPointerMax)
	if err != nil {
		return scanners.Finding{}, false, err
	}
	p, ok := checksums.ParseLFSPointer(data)
	if !ok {
		return scanners.Finding{}, false, nil
	}
	return scanners.At(a, RuleLFSPointer, 0, fmt.Sprintf(
		"%s is a git-LFS pointer, not the file: the content (sha256 %s, %d bytes) was never fetched; run git lfs pull or download it, then verify it against that digest",
		a.Path, p.OID, p.Size)), true, nil
}
