package pins

import (
	"context"
	"fmt"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// FinishTarget judges how a Hub repository target (hf:ORG/NAME@REVISION)
// was named: at a branch or tag (or at none: the main branch), the files
// scanned are what that name points at today, so the target itself is a
// finding that names the commit it resolved to (the target's digest).
func (s *Scanner) FinishTarget(_ context.Context, t scanners.Target) ([]scanners.Finding, error) {
	if t.Kind != scanners.KindHub || t.Digest == "" {
		return nil, nil
	}
	name, rev := splitHubTarget(t.Name)
	if strings.EqualFold(rev, t.Digest) {
		return nil, nil
	}
	shown := rev
	if shown == "" {
		shown = "main"
	}
	a := &scanners.Artifact{Target: t.Name, TargetKind: t.Kind}
	f := scanners.At(a, ruleHubRevisionBranch, 0, fmt.Sprintf(
		"%s was scanned at revision %q, a branch or tag: it is commit %s today, and whoever can push to the repository can point it at other weights and code tomorrow, which from_pretrained(revision=%q) would then download unscanned. Pin the commit that was scanned: %s@%s, revision=%q.",
		t.Name, shown, t.Digest, shown, name, t.Digest, t.Digest))
	f.Evidence = "revision " + shown
	return []scanners.Finding{f}, nil
}

// splitHubTarget splits hf:REPO[@REVISION].
func splitHubTarget(target string) (name, rev string) {
	name, rev, _ = strings.Cut(target, "@")
	return name, rev
}
