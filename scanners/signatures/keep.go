package signatures

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mlwarden/mlwarden/scanners"
)

// The check judges local targets (directories, files, Hub repositories)
// once they are walked: the manifests and signatures it found, the model
// directories with neither. What one artifact gave it for that — the
// digest of a small file it seeded, a manifest or signature to verify (its
// content), a model file's directory — is kept with the artifact's findings
// wherever a source caches them (scanners.StateKeeper): a warm rescan of a
// Hub repository whose files the cache replays verifies the same manifests
// against the same digests and reports the same unsigned directories as a
// cold one. None of it changes the artifact's own findings: those depend on
// its bytes and the policy only.

var _ scanners.StateKeeper = (*Scanner)(nil)

// StateName implements scanners.StateKeeper.
func (s *Scanner) StateName() string { return scanners.CheckSignatures }

// keptState is what one artifact gave the check for FinishTarget.
type keptState struct {
	A        keptArtifact   `json:"a"`
	Seed     *keptSeed      `json:"seed,omitempty"`
	Judge    *keptJudgement `json:"judge,omitempty"`
	ModelDir bool           `json:"model_dir,omitempty"`
}

func (k *keptState) empty() bool { return k.Seed == nil && k.Judge == nil && !k.ModelDir }

// keptArtifact is the artifact as a local target's has it (no layer,
// commit or note: those are images' and git history's).
type keptArtifact struct {
	Kind       scanners.ArtifactKind `json:"kind,omitempty"`
	TargetKind scanners.TargetKind   `json:"target_kind,omitempty"`
	Path       string                `json:"path"`
	Size       int64                 `json:"size,omitempty"`
}

// keptSeed is the sha256 of a small file, taken from the dispatcher's read.
type keptSeed struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// keptJudgement is a manifest or signature to verify: its kind and content.
type keptJudgement struct {
	Kind string `json:"kind"`
	Data []byte `json:"data"`
}

// keep hands what a gave the check to scanners.KeepState.
func (s *Scanner) keep(ctx context.Context, a *scanners.Artifact, k *keptState) {
	if k.empty() || !scanners.KeepsState(ctx) {
		return
	}
	k.A = keptArtifact{Kind: a.Kind, TargetKind: a.TargetKind, Path: a.Path, Size: a.Size}
	data, err := json.Marshal(k)
	if err != nil {
		return // plain structs: cannot fail
	}
	scanners.KeepState(ctx, data)
}

// RestoreState implements scanners.StateKeeper: it seeds the digest,
// queues the judgement and notes the model directory, as Scan did, on the
// target's file system (scanners.ReplayFS).
func (s *Scanner) RestoreState(ctx context.Context, target string, data []byte) error {
	var k keptState
	if err := json.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("signatures state: %w", err)
	}
	if k.empty() {
		return nil
	}
	fsys := scanners.ReplayFS(ctx)
	if fsys == nil {
		return errors.New("signatures state: the target has no file system to verify it on")
	}
	a := scanners.Artifact{Kind: k.A.Kind, Target: target, TargetKind: k.A.TargetKind, Path: k.A.Path, Size: k.A.Size, FS: fsys}
	h, _ := s.hasher(&a)
	if h == nil {
		return fmt.Errorf("signatures state: %s is not a file of a local target", k.A.Path)
	}
	if k.Seed != nil {
		h.Seed(a.Path, "sha256", k.Seed.Digest, k.Seed.Size)
	}
	if k.Judge != nil {
		p := pending{kind: k.Judge.Kind, a: a, data: k.Judge.Data}
		switch p.kind {
		case judgeManifest, judgeModelSig, judgeBundle, judgeDetached:
		default:
			return fmt.Errorf("signatures state: %s: unknown judgement %q", a.Path, p.kind)
		}
		s.prefetch(ctx, &p)
		s.pend(p)
	}
	if k.ModelDir {
		s.noteModelDir(&a)
	}
	return nil
}
