package scanners

// KeptArtifact is where a fact a StateKeeper keeps was found: what a
// finding made from it later (at FinishTarget, or after a cache replays
// the fact) needs of the artifact. It is JSON in the kept state, so its
// field names are part of the cached format.
type KeptArtifact struct {
	Kind       ArtifactKind `json:"kind,omitempty"`
	TargetKind TargetKind   `json:"target_kind,omitempty"`
	Path       string       `json:"path,omitempty"`
	Layer      string       `json:"layer,omitempty"`
	LayerIndex int          `json:"layer_index,omitempty"`
	CreatedBy  string       `json:"created_by,omitempty"`
	Commit     string       `json:"commit,omitempty"`
	Note       string       `json:"note,omitempty"`
}

// Keep returns what a finding at a needs of it.
func Keep(a Artifact) KeptArtifact {
	return KeptArtifact{Kind: a.Kind, TargetKind: a.TargetKind, Path: a.Path, Layer: a.Layer, LayerIndex: a.LayerIndex,
		CreatedBy: a.CreatedBy, Commit: a.Commit, Note: a.Note}
}

// Artifact is the kept artifact again, in target.
func (k KeptArtifact) Artifact(target string) Artifact {
	return Artifact{Kind: k.Kind, Target: target, TargetKind: k.TargetKind, Path: k.Path, Layer: k.Layer,
		LayerIndex: k.LayerIndex, CreatedBy: k.CreatedBy, Commit: k.Commit, Note: k.Note}
}
