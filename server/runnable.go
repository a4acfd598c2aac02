//go:build !mlwarden_sbatch

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// notRunnable says why a pushed manifest is not an image anyone runs:
// signatures, attestations, SBOMs and mlwarden's own verdicts are pushed as
// referrers (with a subject or an artifact type) or under sha256-<hex> tags.
// Scanning them would be wasted work and, for verdicts, a loop: each verdict
// pushed would be announced, scanned and get a verdict of its own. It returns
// "" for a runnable image or index.
func (s *Server) notRunnable(ctx context.Context, ref name.Digest, auth authn.Authenticator) (string, error) {
	o := append([]remote.Option{remote.WithContext(ctx)}, s.remoteOpts...)
	if auth != nil {
		o = append(o, remote.WithAuth(auth))
	}
	desc, err := remote.Get(ref, o...)
	if err != nil {
		return "", fmt.Errorf("fetch manifest %s: %w", ref, err)
	}
	var m struct {
		ArtifactType string `json:"artifactType"`
		Subject      *struct {
			Digest string `json:"digest"`
		} `json:"subject"`
		Config *struct {
			MediaType string `json:"mediaType"`
		} `json:"config"`
		Manifests []struct {
			ArtifactType string `json:"artifactType"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return "", fmt.Errorf("manifest %s: %w", ref, err)
	}
	switch {
	case m.Subject != nil:
		return "a referrer of " + m.Subject.Digest, nil
	case m.ArtifactType != "":
		return "an artifact of type " + m.ArtifactType, nil
	case desc.MediaType.IsImage() && m.Config != nil &&
		m.Config.MediaType != string(types.DockerConfigJSON) && m.Config.MediaType != string(types.OCIConfigJSON):
		return "an artifact with config " + m.Config.MediaType, nil
	case desc.MediaType.IsIndex():
		for _, e := range m.Manifests {
			if e.ArtifactType != "" {
				return "an index of artifacts (referrers)", nil
			}
		}
	}
	return "", nil
}

// isArtifactTag reports whether a tag is one that signing and attestation
// tools and the referrers fallback use (sha256-<hex>[.sig|.att|.sbom]).
func isArtifactTag(tag string) bool {
	return strings.HasPrefix(tag, "sha256-")
}
