//go:build !mlwarden_sbatch

package sweep

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"encoding/json"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/cache"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// Runner scans one shard's targets.
type Runner struct {
	Scanner *scan.Scanner
	// Lister resolves targets to the digest they are at now (registry:
	// the manifest's, hf: the commit) for resuming.
	Lister *Lister
	// Resume skips a target whose result for this rules version, at the
	// digest it resolves to now, is in the cache, and reports the kept
	// result with a note.
	Resume bool
	// Salt is what else decides a kept result (the baseline's content,
	// --severity): results kept under another salt are not reused.
	Salt string
}

// NoteResumed is the note of a target whose result came from the cache.
const NoteResumed = "not rescanned: its result for this rules version and digest was in the result cache (sweep resume)"

// targetEntry is one target's kept result.
type targetEntry struct {
	Digest string           `json:"digest"`
	Result *scanners.Result `json:"result"`
}

// Run scans targets one at a time (each through the whole pipeline, its
// files and layers in parallel) and returns their results merged, in the
// targets' order.
func (r *Runner) Run(ctx context.Context, targets []string) (*scanners.Result, error) {
	var parts []*scanners.Result
	c := r.Scanner.Cache()
	rv := r.Scanner.RulesVersion()
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		digest := ""
		if r.Resume && c != nil && r.Lister != nil {
			digest = r.Lister.Resolve(ctx, t)
		}
		id := t + "@" + digest + "#" + r.Salt
		if digest != "" {
			var e targetEntry
			if c.GetJSON(ctx, cache.KindTarget, rv, id, &e) && e.Digest == digest && e.Result != nil && len(e.Result.Targets) == 1 {
				e.Result.Targets[0].Notes = append(e.Result.Targets[0].Notes, NoteResumed)
				parts = append(parts, e.Result)
				continue
			}
		}
		res, err := r.Scanner.Run(ctx, scan.Target{Ref: t})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		parts = append(parts, res.Result)
		if digest != "" && len(res.Errors) == 0 && len(res.Targets) == 1 && res.Targets[0].Digest == digest && ctx.Err() == nil {
			c.PutJSON(ctx, cache.KindTarget, rv, id, targetEntry{Digest: digest, Result: res.Result})
		}
	}
	return Merge(parts...)
}

// Resolve returns the digest target is at now: a registry image's manifest
// digest (a HEAD request), a Hub repository's commit; "" when it cannot
// tell (a local path, a registry that does not answer), and the target is
// then scanned.
func (l *Lister) Resolve(ctx context.Context, target string) string {
	switch {
	case strings.HasPrefix(target, "registry:"):
		ref := strings.TrimPrefix(target, "registry:")
		if i := strings.LastIndex(ref, "@sha256:"); i >= 0 {
			return ref[i+1:]
		}
		host, _, _ := strings.Cut(ref, "/")
		r, err := name.ParseReference(ref, l.nameOptions(host)...)
		if err != nil {
			return ""
		}
		d, err := remote.Head(r, l.remoteOptions(ctx)...)
		if err != nil {
			return ""
		}
		return d.Digest.String()
	case strings.HasPrefix(target, "hf:"):
		return l.hubCommit(ctx, strings.TrimPrefix(target, "hf:"))
	}
	return ""
}

// hubCommit asks the Hub which commit [datasets/|spaces/]ORG/NAME[@REV] is
// at: GET /api/models/ORG/NAME/revision/REV.
func (l *Lister) hubCommit(ctx context.Context, ref string) string {
	kind := "models"
	for _, k := range []string{"datasets", "spaces"} {
		if r, ok := strings.CutPrefix(ref, k+"/"); ok {
			kind, ref = k, r
		}
	}
	repo, rev, _ := strings.Cut(ref, "@")
	if rev == "" {
		rev = "main"
	}
	if len(rev) == 40 && strings.Trim(strings.ToLower(rev), "0123456789abcdef") == "" {
		return strings.ToLower(rev)
	}
	u := l.hubEndpoint() + "/api/" + kind + "/" + repo + "/revision/" + url.PathEscape(rev)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ""
	}
	req.Header.Set("User-Agent", "mlwarden")
	if l.HubToken != "" {
		req.Header.Set("Authorization", "Bearer "+l.HubToken)
	}
	resp, err := l.client().Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	var info struct {
		SHA string `json:"sha"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, maxHubPage)).Decode(&info) != nil || len(info.SHA) != 40 {
		return ""
	}
	return info.SHA
}
