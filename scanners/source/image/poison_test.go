//go:build !mlwarden_sbatch

package image

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
)

// imgClaiming returns an image with layer l whose config claims diffID
// for it: the bytes are l's, the claim another layer's.
func imgClaiming(t *testing.T, l v1.Layer, diffID v1.Hash) v1.Image {
	t.Helper()
	img, err := imgAppend(l)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs = []v1.Hash{diffID}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// TestImageCachePoisoning: an image whose config claims another layer's
// diff ID while carrying other bytes neither fills the cache under that
// name (which would hide the real layer's findings from later scans) nor,
// the other way round, gets the findings cached for that name instead of
// its own. Both are crafted here, for every scheme.
func TestImageCachePoisoning(t *testing.T) {
	secret := imgTestSecret("hf_", 41)
	evil := imgTestLayer(t, compression.GZip, imgTestEntry{name: "app/.env", body: "HF_TOKEN=" + secret + "\n"})
	harmless := imgTestLayer(t, compression.GZip, imgTestEntry{name: "app/readme.txt", body: "nothing to see\n"})
	evilDiff, _ := evil.DiffID()
	harmlessDiff, _ := harmless.DiffID()
	real, err := imgAppend(evil)
	if err != nil {
		t.Fatal(err)
	}
	honest, err := imgAppend(harmless)
	if err != nil {
		t.Fatal(err)
	}
	decoy := imgClaiming(t, harmless, evilDiff)     // harmless bytes named as the evil layer
	disguised := imgClaiming(t, evil, harmlessDiff) // evil bytes named as the harmless layer

	host := registrytest.Any(t)
	place := func(t *testing.T, scheme string, img v1.Image) string {
		switch scheme {
		case SchemeOCI:
			return imgWriteOCI(t, img, nil)
		case SchemeDockerArchive:
			return imgWriteArchive(t, img)
		}
		ref := registrytest.Repo(t, host) + ":1"
		registrytest.PushImage(t, img, ref)
		return ref
	}
	scan := func(t *testing.T, scheme, ref string, o Options) *imgResultTestSink {
		t.Helper()
		src, err := Open(context.Background(), scheme, ref, o)
		if err != nil {
			t.Fatal(err)
		}
		s := &imgResultTestSink{scs: []scanners.Scanner{newImgRecorder()}}
		if err := src.Walk(context.Background(), s); err != nil {
			s.Error(scanners.Error{Message: err.Error()})
		}
		return s
	}
	reported := func(s *imgResultTestSink) bool {
		for _, f := range s.findings {
			if f.Path == "/app/.env" {
				return true
			}
		}
		return false
	}
	mismatch := func(s *imgResultTestSink) bool {
		for _, e := range s.errs {
			if strings.Contains(e.Message, "diff ID mismatch") {
				return true
			}
		}
		return false
	}
	for _, scheme := range []string{SchemeRegistry, SchemeOCI, SchemeDockerArchive} {
		t.Run(scheme, func(t *testing.T) {
			t.Run("decoy first", func(t *testing.T) {
				o := Options{RulesVersion: "poison-1", CacheDir: t.TempDir(), Insecure: []string{host}}
				d := scan(t, scheme, place(t, scheme, decoy), o)
				if scheme != SchemeDockerArchive && !mismatch(d) {
					// (A docker archive's reader checks the diff ID
					// itself, and always did.)
					t.Errorf("a layer that is not what its config claims gave no error: %v", d.errs)
				}
				if len(d.errs) == 0 {
					t.Error("the decoy scanned clean, with no error")
				}
				r := scan(t, scheme, place(t, scheme, real), o)
				if !reported(r) {
					t.Errorf("the decoy filled the cache: the real layer's secret is not reported (replayed %d, scanned %d, errors %v)", r.replayed, r.scanned, r.errs)
				}
			})
			t.Run("honest first", func(t *testing.T) {
				o := Options{RulesVersion: "poison-1", CacheDir: t.TempDir(), Insecure: []string{host}}
				if h := scan(t, scheme, place(t, scheme, honest), o); len(h.errs) > 0 {
					t.Fatalf("honest image: %v", h.errs)
				}
				d := scan(t, scheme, place(t, scheme, disguised), o)
				if !reported(d) {
					t.Errorf("a layer named as a cached clean one was not scanned: its secret is not reported (replayed %d, errors %v)", d.replayed, d.errs)
				}
				if len(d.errs) == 0 {
					t.Error("a layer that is not what its config claims gave no error")
				}
			})
		})
	}
}
