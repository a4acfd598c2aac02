package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/ranged"
)

// OCI model artifacts: a manifest whose artifactType or config media type
// is not a container image's holds model files as layers — one file per
// raw layer, named by an annotation, or a tar of files. They are read as
// files, never as a root file system: no image config is handed to the
// checks (a model's config says nothing of users or entrypoints), and raw
// layers (and uncompressed tar layers) of a registry or a layout are read
// in place with ranged reads, so that a 4 GiB safetensors layer costs its
// header. The media types, checked 2026-12 against each producer's source
// (see docs/design/model-sources.md, README "Model sources"):
const (
	// CNCF ModelPack (github.com/modelpack/model-spec, specs-go/v1/mediatype.go).
	MediaModelPackManifest = "application/vnd.cncf.model.manifest.v1+json" // artifactType
	MediaModelPackConfig   = "application/vnd.cncf.model.config.v1+json"
	// Before 2025-06-30 the same types were spelled vnd.cnai.
	MediaCNAIManifest = "application/vnd.cnai.model.manifest.v1+json"
	MediaCNAIConfig   = "application/vnd.cnai.model.config.v1+json"
	// KitOps ModelKits (github.com/kitops-ml/kitops, pkg/lib/constants/mediaType.go).
	MediaKitOpsConfig = "application/vnd.kitops.modelkit.config.v1+json"
	// Docker model artifacts (github.com/docker/model-runner,
	// pkg/distribution/types/config.go): v0.1, and v0.2 for one layer per file.
	MediaDockerModelConfig   = "application/vnd.docker.ai.model.config.v0.1+json"
	MediaDockerModelConfigV2 = "application/vnd.docker.ai.model.config.v0.2+json"
	// The OCI empty config of artifacts (ORAS and others).
	MediaOCIEmpty = "application/vnd.oci.empty.v1+json"
)

// Layer annotations that name a raw layer's file.
const (
	AnnotationModelPackPath = "org.cncf.model.filepath"
	AnnotationCNAIPath      = "org.cnai.model.filepath"
	AnnotationFileMetadata  = "org.cncf.model.file.metadata+json"
	AnnotationCNAIMetadata  = "org.cnai.model.file.metadata+json"
	AnnotationTitle         = "org.opencontainers.image.title"
	// ORAS pushes a directory as a tar+gzip layer marked for unpacking.
	AnnotationORASUnpack = "io.deis.oras.content.unpack"
)

// ModelConfigPath is the Path of a model artifact's config blob, handed
// to the checks as a file (a KitOps config is the Kitfile as JSON).
const ModelConfigPath = "/.model-config.json"

// DefaultDownloadLimit is Options.DownloadLimit's default.
const DefaultDownloadLimit = 2 << 30

// imgModel is what a manifest says about a model artifact.
type imgModel struct {
	format   string // "CNCF ModelPack", "KitOps ModelKit", "Docker model", "OCI artifact"
	why      string // the media type that said so
	manifest *v1.Manifest
}

// modelOf recognises a model artifact by its manifest, nil for a
// container image. A docker archive holds images only (and asking one
// for its manifest may compress every layer), so it is never one.
func (s *imgSource) modelOf(img v1.Image) *imgModel {
	if s.scheme == SchemeDockerArchive {
		return nil
	}
	m, err := img.Manifest()
	if err != nil || m == nil {
		return nil // the image walk reports it
	}
	cfg, at := string(m.Config.MediaType), m.ArtifactType
	out := &imgModel{manifest: m}
	switch {
	case at == MediaModelPackManifest || at == MediaCNAIManifest:
		out.format, out.why = "CNCF ModelPack", "artifactType "+at
	case strings.HasPrefix(cfg, "application/vnd.cncf.model.") || strings.HasPrefix(cfg, "application/vnd.cnai.model."):
		out.format, out.why = "CNCF ModelPack", "config "+cfg
	case strings.HasPrefix(cfg, "application/vnd.kitops.modelkit."):
		out.format, out.why = "KitOps ModelKit", "config "+cfg
	case strings.HasPrefix(cfg, "application/vnd.docker.ai.model.config."):
		out.format, out.why = "Docker model", "config "+cfg
	case cfg == "" || cfg == string(types.OCIConfigJSON) || cfg == string(types.DockerConfigJSON):
		return nil // a container image
	default:
		out.format, out.why = "OCI artifact", "config "+cfg
		if at != "" {
			out.why = "artifactType " + at + ", config " + cfg
		}
	}
	return out
}

// tarType matches the media types of tar layers: …tar, …tar+gzip,
// …tar+zstd (ModelPack, KitOps, OCI and Docker layers, Docker model
// runner's .vllm.config.tar and .dir.tar).
var tarType = regexp.MustCompile(`[.+]tar([+.](gzip|zstd|gz))?$`)

// knownModelType reports a media type of the model formats, whose tar and
// raw suffixes say what the layer is.
func knownModelType(mt string) bool {
	for _, p := range []string{"application/vnd.cncf.model.", "application/vnd.cnai.model.", "application/vnd.kitops.modelkit.", "application/vnd.docker.ai."} {
		if strings.HasPrefix(mt, p) {
			return true
		}
	}
	return false
}

// modelLayerKind says whether a layer is one raw file (and its absolute,
// cleaned path) or a tar of files. An annotation is data: it is cleaned
// to a path inside the artifact, never used to reach anything.
func modelLayerKind(d v1.Descriptor) (raw bool, name string) {
	mt := string(d.MediaType)
	a := d.Annotations
	name = a[AnnotationModelPackPath]
	if name == "" {
		name = a[AnnotationCNAIPath]
	}
	if name == "" {
		name = a[AnnotationTitle]
	}
	for _, k := range []string{AnnotationFileMetadata, AnnotationCNAIMetadata} {
		if name != "" {
			break
		}
		var md struct {
			Name string `json:"name"`
		}
		if json.Unmarshal([]byte(a[k]), &md) == nil {
			name = md.Name
		}
	}
	switch {
	case a[AnnotationORASUnpack] == "true":
		raw = false
	case !knownModelType(mt) && a[AnnotationTitle] != "":
		raw = true // ORAS names each pushed file, whatever its media type
	default:
		raw = !tarType.MatchString(mt)
	}
	if raw {
		name = path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))
		if name == "/" {
			ext := ""
			switch {
			case strings.Contains(mt, "gguf"):
				ext = ".gguf"
			case strings.Contains(mt, "safetensors"):
				ext = ".safetensors"
			}
			name = "/" + strings.ReplaceAll(d.Digest.String(), ":", "-") + ext
		}
	}
	return raw, name
}

// modelStats is what a model artifact's walk downloaded, for its notes.
type modelStats struct {
	budget    *ranged.Budget
	total     int64
	raw, tars int
	partial   atomic.Int64 // raw layers read in part
	verified  atomic.Int64 // raw layers read whole and checked
}

// model walks a model artifact: its config as a file, each layer as one
// file or a tar of files.
func (w *imgWalker) model(ctx context.Context, pi imgPlatformImage, m *imgModel) error {
	target := w.src.Target().Name
	digest := w.src.Target().Digest
	layers, err := pi.img.Layers()
	if err != nil {
		return fmt.Errorf("read manifest: %w", imgRegistryErrorMaybe(w.src, err))
	}
	if len(layers) != len(m.manifest.Layers) {
		return fmt.Errorf("read manifest: %d layers listed, %d found", len(m.manifest.Layers), len(layers))
	}
	raw, err := pi.img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("read model config: %w", imgRegistryErrorMaybe(w.src, err))
	}
	if len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("{}")) {
		ca := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: target, TargetKind: scanners.KindImage,
			Path: ModelConfigPath, Size: int64(len(raw)), Mode: 0o444, Digest: digest}
		if err := w.sink.Artifact(ca, bytes.NewReader(raw)); err != nil {
			return err
		}
	}
	limit := w.opts.DownloadLimit
	if w.src.scheme != SchemeRegistry {
		limit = -1 // a layout's bytes are on disk: counted, not bounded
	}
	st := &modelStats{budget: ranged.NewBudget(limit)}
	blobs, closeBlobs, err := w.src.blobRanges(ctx)
	if err != nil {
		return err
	}
	defer closeBlobs()
	var g errgroup.Group
	g.SetLimit(w.opts.Concurrency)
	stopped := &imgStop{}
	for i, l := range layers {
		if ctx.Err() != nil || stopped.get() != nil {
			break
		}
		d := m.manifest.Layers[i]
		st.total += d.Size
		j := &imgLayerJob{index: i, count: len(layers), layer: l, diffID: d.Digest.String(), digest: d.Digest.String(), size: d.Size}
		fail := func(err error) {
			if err != nil && stopped.get() == nil && ctx.Err() == nil {
				w.sink.Error(scanners.Error{Target: target, Message: fmt.Sprintf("%s (%s): %v", j.name(), d.MediaType, err)})
			}
		}
		isRaw, name := modelLayerKind(d)
		if !isRaw {
			st.tars++
			fail(w.modelTar(ctx, j, blobs, st, &g, stopped))
			continue
		}
		// Raw layers are files: read several at once, as the other sources
		// read files (each one's reads wait on the network).
		st.raw++
		g.Go(func() error {
			fail(w.modelRaw(ctx, j, name, blobs, st, stopped))
			return nil
		})
	}
	_ = g.Wait()
	if e := stopped.get(); e != nil {
		return e
	}
	w.src.addNote(st.note(m, len(layers)))
	for _, n := range st.more() {
		w.src.addNote(n)
	}
	return ctx.Err()
}

func (st *modelStats) note(m *imgModel, n int) string {
	used := st.budget.Used()
	pct := 0.0
	if st.total > 0 {
		pct = 100 * float64(used) / float64(st.total)
	}
	return fmt.Sprintf("OCI model artifact, %s (%s): %d layers, %d raw file(s) read in place, %d tar(s) walked; downloaded %s of its %s (%.3f%%) in %d requests besides the manifest and config",
		m.format, m.why, n, st.raw, st.tars, ranged.FormatBytes(used), ranged.FormatBytes(st.total), pct, st.budget.Requests())
}

func (st *modelStats) more() []string {
	var out []string
	if p := st.partial.Load(); p > 0 {
		out = append(out, fmt.Sprintf("%d raw layer(s) were read in part, only where the checks read them: a layer's digest is checked when it is read whole (%d were), so their other bytes were neither downloaded nor verified", p, st.verified.Load()))
	}
	if refused := st.budget.Refused(); len(refused) > 0 {
		shown := refused[:min(len(refused), 5)]
		more := ""
		if len(refused) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(refused)-len(shown))
		}
		out = append(out, fmt.Sprintf("--download-limit %s reached: %d file(s) or layer(s) not scanned in full: %s%s", ranged.FormatBytes(st.budget.Limit()), len(refused), strings.Join(shown, ", "), more))
	}
	return out
}

// blobRange makes the Fetcher of one blob's byte ranges (nil: the source
// cannot read blobs in ranges).
type blobRange func(d v1.Hash, size int64) ranged.Fetcher

// blobRanges returns how this source reads blobs in ranges: HTTP Range on
// a registry's blob URL, ReadAt on a layout's blob file.
func (s *imgSource) blobRanges(ctx context.Context) (blobRange, func(), error) {
	nop := func() {}
	switch s.scheme {
	case SchemeOCI:
		var mu sync.Mutex
		var files []*os.File
		return func(d v1.Hash, size int64) ranged.Fetcher {
				if d.Algorithm != "sha256" || len(d.Hex) != 64 {
					return nil
				}
				f, err := os.Open(filepath.Join(s.ref, "blobs", d.Algorithm, d.Hex))
				if err != nil {
					return nil
				}
				mu.Lock()
				files = append(files, f)
				mu.Unlock()
				return func(_ context.Context, off, n int64) ([]byte, error) {
					buf := make([]byte, n)
					if _, err := f.ReadAt(buf, off); err != nil {
						return nil, fmt.Errorf("read blob %s: %w", imgShort(d.String()), err)
					}
					return buf, nil
				}
			}, func() {
				mu.Lock()
				defer mu.Unlock()
				for _, f := range files {
					f.Close()
				}
			}, nil
	case SchemeRegistry:
	default:
		return func(v1.Hash, int64) ranged.Fetcher { return nil }, nop, nil
	}
	repo := s.nameRef.Context()
	auth, err := authn.Resolve(ctx, imgFallbackKeychain{s.opts.Keychain}, repo)
	if err != nil {
		auth = authn.Anonymous
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.ResponseHeaderTimeout = 60 * time.Second
	base.DisableCompression = true
	if s.opts.Dial != nil {
		base.DialContext = imgBoundDial(s.opts.Dial, s.opts.NetworkTimeout)
	}
	rt, err := transport.NewWithContext(ctx, repo.Registry, auth, imgBoundTransport(base, s.opts.NetworkTimeout), []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, nop, imgRegistryError(repo.RegistryStr(), err)
	}
	client := &http.Client{Transport: rt, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		if req.URL.Scheme != "https" && via[0].URL.Scheme == "https" {
			return fmt.Errorf("refused a redirect from https to plain HTTP at %s", req.URL.Host)
		}
		return nil
	}}
	return func(d v1.Hash, size int64) ranged.Fetcher {
		u := fmt.Sprintf("%s://%s/v2/%s/blobs/%s", repo.Scheme(), repo.RegistryStr(), repo.RepositoryStr(), d)
		return func(ctx context.Context, off, n int64) ([]byte, error) {
			return rangeGet(ctx, client, u, off, n, size)
		}
	}, nop, nil
}

// rangeGet reads n bytes at off of the blob at u, of size bytes.
func rangeGet(ctx context.Context, c *http.Client, u string, off, n, size int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		cr := resp.Header.Get("Content-Range")
		var a, b, total int64
		if _, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &a, &b, &total); err != nil || a != off || b != off+n-1 {
			return nil, fmt.Errorf("asked for bytes %d-%d, the registry answered Content-Range %q", off, off+n-1, cr)
		}
		if total != size {
			return nil, fmt.Errorf("the blob is %d bytes, the manifest says %d (corrupt or tampered)", total, size)
		}
	case http.StatusOK:
		if resp.ContentLength >= 0 && resp.ContentLength != size {
			return nil, fmt.Errorf("the blob is %d bytes, the manifest says %d (corrupt or tampered)", resp.ContentLength, size)
		}
		if off != 0 {
			return nil, errors.New("the registry does not honour byte ranges on blobs")
		}
	default:
		return nil, imgRegistryError(req.URL.Host, fmt.Errorf("GET blob: %s", resp.Status))
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		return nil, fmt.Errorf("read blob bytes %d-%d: %w", off, off+n-1, err)
	}
	return buf, nil
}

// blobReader is a ranged reader of one layer's blob, checking the digest
// once it has been read whole.
func (w *imgWalker) blobReader(ctx context.Context, j *imgLayerJob, name string, blobs blobRange, st *modelStats) (*ranged.Reader, bool) {
	h, err := v1.NewHash(j.digest)
	if err != nil {
		return nil, false
	}
	fetch := blobs(h, j.size)
	if fetch == nil {
		return nil, false
	}
	rd := ranged.New(ctx, j.size, fetch, ranged.Options{
		Path: name, Budget: st.budget, ZipReadAhead: true,
		Verify: func(data []byte) error {
			sum := sha256.Sum256(data)
			if got := "sha256:" + hex.EncodeToString(sum[:]); got != j.digest {
				return fmt.Errorf("digest mismatch: content is %s, manifest says %s (corrupt or tampered blob)", imgShort(got), imgShort(j.digest))
			}
			st.verified.Add(1)
			return nil
		},
	})
	return rd, true
}

// modelRaw hands one raw layer to the sink as the file it is.
func (w *imgWalker) modelRaw(ctx context.Context, j *imgLayerJob, name string, blobs blobRange, st *modelStats, stopped *imgStop) error {
	a := &scanners.Artifact{
		Kind: scanners.ArtifactFile, Target: w.src.Target().Name, TargetKind: scanners.KindImage,
		Path: name, Size: j.size, Mode: 0o644, Layer: j.diffID, LayerIndex: j.index,
	}
	if rd, ok := w.blobReader(ctx, j, name, blobs, st); ok {
		err := w.sink.Artifact(a, rd)
		if fetched := rd.Fetched(); fetched < j.size {
			st.partial.Add(1)
		}
		if err != nil {
			stopped.set(err)
		}
		return nil
	}
	// No ranged reads (a docker archive): stream the blob, checking its
	// digest at the end.
	if err := st.budget.Charge(name, j.size); err != nil {
		return err
	}
	rc, err := j.layer.Compressed()
	if err != nil {
		return fmt.Errorf("fetch: %w", imgRegistryErrorMaybe(w.src, err))
	}
	defer rc.Close()
	if err := w.sink.Artifact(a, rc); err != nil {
		stopped.set(err)
	}
	return nil
}

// modelTar walks a tar layer: in place when it is uncompressed and the
// source reads blobs in ranges, else streamed (and decompressed) whole.
func (w *imgWalker) modelTar(ctx context.Context, j *imgLayerJob, blobs blobRange, st *modelStats, g *errgroup.Group, stopped *imgStop) error {
	if rd, ok := w.blobReader(ctx, j, j.digest, blobs, st); ok {
		magic := make([]byte, 4)
		if n, _ := rd.ReadAt(magic, 0); n == 4 && !(magic[0] == 0x1f && magic[1] == 0x8b) && !bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
			return w.tarInPlace(ctx, j, rd, g, stopped)
		}
	}
	if err := st.budget.Charge(j.digest, j.size); err != nil {
		return err
	}
	r, err := w.open(j)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := w.walkLayer(ctx, j, r, newImgHidden(), g, nil, false, stopped); err != nil {
		return err
	}
	return r.Close()
}

// tarInPlace walks an uncompressed tar read through ra: headers are read,
// member data is skipped (the tar reader seeks), and each regular member
// is handed over as a section of ra, so the checks read only what they need.
func (w *imgWalker) tarInPlace(ctx context.Context, j *imgLayerJob, ra *ranged.Reader, g *errgroup.Group, stopped *imgStop) error {
	target := w.src.Target().Name
	sec := io.NewSectionReader(ra, 0, ra.Size())
	tr := tar.NewReader(sec)
	for entries := 0; ; entries++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e := stopped.get(); e != nil {
			return e
		}
		if entries >= w.opts.MaxEntries {
			return fmt.Errorf("more than %d tar entries (the MaxEntries bound)", w.opts.MaxEntries)
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return imgReadErr(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue // directories, links, devices: no bytes of their own
		}
		a := &scanners.Artifact{
			Kind: scanners.ArtifactFile, Target: target, TargetKind: scanners.KindImage,
			Path: path.Clean("/" + hdr.Name), Size: hdr.Size, Mode: hdr.FileInfo().Mode(),
			Layer: j.diffID, LayerIndex: j.index,
		}
		if sparse(hdr) {
			// The tar reader expands a sparse member: its bytes are not a
			// section of the blob. Hand the stream over as it comes.
			if err := w.sink.Artifact(a, tr); err != nil {
				stopped.set(err)
			}
			continue
		}
		off, err := sec.Seek(0, io.SeekCurrent)
		if err != nil || off+hdr.Size > ra.Size() {
			return fmt.Errorf("%s: member runs past the layer's end", a.Path)
		}
		member := io.NewSectionReader(ra, off, hdr.Size)
		g.Go(func() error {
			if err := w.sink.Artifact(a, member); err != nil {
				stopped.set(err)
			}
			return nil
		})
	}
}

// sparse reports a GNU or PAX sparse member.
func sparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}
