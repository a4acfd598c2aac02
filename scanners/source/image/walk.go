package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/mlwarden/mlwarden/scanners"
)

// How the walker reads layers.
//
// Each layer is streamed once: fetched, decompressed (gzip or zstd, chosen by
// magic bytes) and its tar walked in one pass; nothing is written to disk.
//
// Files deleted by a later layer must carry the note "deleted in layer N —
// still present in the image" on the artifact, because scanners copy the
// note into each finding when they make it (scanners.At); a finding cannot be
// rewritten after the fact, and the Sink does not hand findings back. So the
// deletions must be known before an earlier layer is walked. A headers-only
// pre-pass would cost a second fetch and decompression of every layer. We
// walk the layers top-down instead, last layer first: when layer i is walked,
// every whiteout, opaque directory and replacing entry of the layers above it
// has been seen. Order costs no parallelism where it matters: files of a
// layer are scanned by a pool of workers while the walker reads on, the next
// layers are fetched and decompressed ahead into bounded buffers, and the
// walk of layer i-1 starts as soon as the tar of layer i has been read, while
// its last files are still being scanned.
//
// Files replaced by a later layer are hidden in the same way and carry
// "replaced in layer N — the old copy is still present in the image".
// Symbolic and hard links are recorded (they hide lower paths) and never
// followed; they are not artifacts, since they have no bytes of their own.

const (
	// imgBufferMax is the largest file read into memory so that a worker can
	// scan it while the walker reads on; larger files are handed over as a
	// stream from the walker itself (the dispatcher reads what it needs).
	imgBufferMax = 4 << 20
	// imgPrefetchBuffer is how many decompressed bytes the pipe of the layer
	// being walked may hold.
	imgPrefetchBuffer = 8 << 20
	// imgSpillBytes is the ring in a temporary file that a layer fetched
	// ahead is decompressed into (imgSpill): so much of it is decompressed
	// and hashed while the layers above are walked.
	imgSpillBytes = 256 << 20
	imgChunk      = 256 << 10
)

type imgWalker struct {
	src      *imgSource
	sink     scanners.Sink
	opts     Options
	cache    *imgCache
	progress *imgProgress
}

// imgLayerJob is one layer of one image.
type imgLayerJob struct {
	index  int
	count  int
	layer  v1.Layer
	diffID string
	// diffKnown: diffID is the config's (or the layer's) diff ID, not a
	// stand-in for a missing one.
	diffKnown bool
	digest    string // the compressed blob's digest, "" when unknown
	size      int64  // compressed size, 0 when unknown
	createdBy string
	cached    *imgCacheEntry

	stream   imgStream  // the decompressed tar stream, once fetching started
	ahead    bool       // fetched ahead: holds a token of the walk's ahead semaphore
	events   *imgEvents // what the layer hides below it, once walked
	replayed bool       // its findings came from the cache

	mu     sync.Mutex
	rec    scanners.Record   // what its files gave, for the cache
	notes  map[string]string // path → note, for paths with findings or state
	failed atomic.Bool       // some file or the layer could not be scanned
	// verified is set once mlwarden has hashed the whole decompressed
	// stream and found the diff ID the config claims (and the blob's
	// digest, where there is one): only then may the layer be cached.
	verified atomic.Bool
}

func (j *imgLayerJob) name() string {
	return fmt.Sprintf("layer %d/%d %s", j.index+1, j.count, imgShort(j.diffID))
}

func imgShort(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

func (w *imgWalker) image(ctx context.Context, pi imgPlatformImage) error {
	if m := w.src.modelOf(pi.img); m != nil {
		return w.model(ctx, pi, m) // model.go: files, not a root file system
	}
	target := w.src.Target().Name
	img := pi.img
	where := ""
	if pi.platform != "" {
		where = " (" + pi.platform + ")"
	}

	raw, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("read image config%s: %w", where, imgRegistryErrorMaybe(w.src, err))
	}
	cf, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("parse image config%s: %w", where, err)
	}
	cfgPath := ConfigPath
	if pi.all {
		cfgPath += "@" + pi.platform
	}
	ca := &scanners.Artifact{
		Kind: scanners.ArtifactImageConfig, Target: target, TargetKind: scanners.KindImage,
		Path: cfgPath, Size: int64(len(raw)), Mode: 0o444, Digest: w.src.Target().Digest,
	}
	if err := w.sink.Artifact(ca, bytes.NewReader(raw)); err != nil {
		return err
	}

	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("read manifest%s: %w", where, imgRegistryErrorMaybe(w.src, err))
	}
	createdBy := imgCreatedBy(cf, len(layers))
	jobs := make([]*imgLayerJob, len(layers))
	for i, l := range layers {
		j := &imgLayerJob{index: i, count: len(layers), layer: l, createdBy: createdBy[i]}
		// The config's rootfs.diff_ids: asking the layer may decompress it
		// (an OCI layout's layers do) just to hash it.
		if len(cf.RootFS.DiffIDs) == len(layers) {
			j.diffID, j.diffKnown = cf.RootFS.DiffIDs[i].String(), true
		} else if d, err := l.DiffID(); err == nil {
			j.diffID, j.diffKnown = d.String(), true
		}
		if w.src.scheme != SchemeDockerArchive {
			if d, err := l.Digest(); err == nil {
				j.digest = d.String()
			}
			if n, err := l.Size(); err == nil {
				j.size = n
			}
		}
		if j.diffID == "" {
			j.diffID = j.digest
		}
		if j.diffID == "" {
			return fmt.Errorf("layer %d%s: no digest in the manifest or config", i+1, where)
		}
		j.cached = w.cache.load(ctx, j.diffID, j.digest)
		jobs[i] = j
	}
	w.progress.addLayers(jobs)

	// Top-down: the last layer first (see the comment at the top).
	order := make([]*imgLayerJob, 0, len(jobs))
	for i := len(jobs) - 1; i >= 0; i-- {
		order = append(order, jobs[i])
	}
	rs, _ := w.sink.(scanners.ResultSink)
	useCache := w.cache.enabled() && rs != nil

	ahead := make(chan struct{}, min(w.opts.Concurrency, 4))
	fetchCtx, cancelFetch := context.WithCancel(ctx)
	var fetchers sync.WaitGroup
	defer func() {
		// Layers fetched ahead but not walked (the walk stopped early):
		// release their fetchers before waiting for them.
		cancelFetch()
		for _, j := range jobs {
			if j.stream != nil {
				j.stream.closeRead()
			}
		}
		fetchers.Wait()
	}()
	next := 0 // next index in order to fetch ahead
	startAhead := func(cur int) {
		for next < len(order) {
			j := order[next]
			if next <= cur || (useCache && j.cached != nil) {
				next++
				continue
			}
			select {
			case ahead <- struct{}{}:
			default:
				return
			}
			// A ring in a temporary file, so that a layer (up to the ring's
			// size, Options.spillBytes) is decompressed and hashed while
			// the layers above are walked; in memory when no file can be
			// made.
			if w.opts.spillBytes > 0 {
				if sp, err := newImgSpill("", w.opts.spillBytes); err == nil {
					j.stream = sp
				}
			}
			if j.stream == nil {
				j.stream = newImgPipe(imgPrefetchBuffer / imgChunk)
			}
			j.ahead = true
			fetchers.Add(1)
			go func() {
				defer fetchers.Done()
				w.fetch(fetchCtx, j, j.stream)
			}()
			next++
		}
	}
	// done ends the walk's use of a layer's stream. The token of a layer
	// fetched ahead is given back only now, when its buffer is no longer
	// held, so that at most len(ahead) layers are held ahead.
	done := func(j *imgLayerJob) {
		if j.stream != nil {
			j.stream.closeRead()
		}
		if j.ahead {
			j.ahead = false
			<-ahead
		}
	}

	hidden := newImgHidden()
	var g errgroup.Group
	g.SetLimit(w.opts.Concurrency)
	stopped := &imgStop{} // the sink's error, which ends the walk
	for k, j := range order {
		if ctx.Err() != nil {
			break
		}
		startAhead(k)
		if useCache && j.cached != nil && j.cached.matches(hidden, j.diffID, j.digest) && w.verifyHit(ctx, j) {
			done(j)
			rs.Replay(target, j.cached.record())
			hidden.merge(j.index, j.cached.events())
			j.replayed = true
			w.progress.layerDone(j, true)
			continue
		}
		if j.stream == nil {
			j.stream = newImgPipe(imgPrefetchBuffer / imgChunk)
			fetchers.Add(1)
			go func() {
				defer fetchers.Done()
				w.fetch(fetchCtx, j, j.stream)
			}()
		}
		var r io.Reader = j.stream
		if _, ok := j.stream.(*imgSpill); ok {
			// The tar reader reads headers 512 bytes at a time: not a
			// system call each.
			r = bufio.NewReaderSize(j.stream, imgChunk)
		}
		ev, err := w.walkLayer(ctx, j, r, hidden, &g, rs, useCache, stopped)
		done(j)
		hidden.merge(j.index, ev)
		j.events = ev
		w.progress.layerDone(j, false)
		if err != nil {
			j.failed.Store(true)
			if stopped.get() != nil || ctx.Err() != nil {
				break
			}
			msg := fmt.Sprintf("%s%s: %v", j.name(), where, err)
			if j.digest != "" && j.digest != j.diffID {
				msg = fmt.Sprintf("%s (blob %s)%s: %v", j.name(), imgShort(j.digest), where, err)
			}
			// One layer's failure is the layer's error; the other layers
			// are still scanned and their findings reported.
			w.sink.Error(scanners.Error{Target: target, Message: msg})
		}
	}
	_ = g.Wait()
	if e := stopped.get(); e != nil {
		return e
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if useCache {
		for _, j := range jobs {
			if j.failed.Load() || j.replayed || j.events == nil || !j.verified.Load() {
				continue // only what mlwarden hashed and found as claimed
			}
			w.cache.store(ctx, j, j.events)
		}
	}
	return nil
}

// verifyHit hashes a local layer before its cached findings are replayed:
// an OCI layout's blob file or a docker archive's layer can be changed on
// disk without changing the digests that name it, so a hit there costs a
// read and a hash (no decompression, no scan). A registry serves a blob by
// its digest, which every client checks on pull: a hit is not fetched.
func (w *imgWalker) verifyHit(ctx context.Context, j *imgLayerJob) bool {
	var open func() (io.ReadCloser, error)
	want := j.digest
	switch w.src.scheme {
	case SchemeRegistry:
		return true
	case SchemeOCI:
		open = j.layer.Compressed
	case SchemeDockerArchive:
		open, want = j.layer.Uncompressed, j.diffID
	default:
		return false
	}
	rc, err := open()
	if err != nil {
		return false
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, imgCtxReader{ctx, rc}); err != nil {
		return false
	}
	return "sha256:"+hex.EncodeToString(h.Sum(nil)) == want
}

// imgCtxReader stops reading once ctx is done.
type imgCtxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r imgCtxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// imgCreatedBy maps the history entries that made a layer to the layers, in
// order. When the counts disagree the mapping is unknown and left empty.
func imgCreatedBy(cf *v1.ConfigFile, n int) []string {
	out := make([]string, n)
	var made []string
	for _, h := range cf.History {
		if !h.EmptyLayer {
			made = append(made, h.CreatedBy)
		}
	}
	if len(made) == n {
		copy(out, made)
	}
	return out
}

// fetch opens a layer, decompresses it and writes the tar stream into p,
// checking the blob's digest at its end.
func (w *imgWalker) fetch(ctx context.Context, j *imgLayerJob, p imgStream) {
	r, err := w.openTo(j, p)
	if err != nil {
		p.closeWrite(err)
		return
	}
	defer r.Close()
	send := p.write
	if r.fwd != nil {
		send = r.fwd.write // hashed on the way (the diff ID)
	}
	// fail ends the stream with err once every chunk sent is in it.
	fail := func(err error) {
		r.Close()
		p.closeWrite(err)
	}
	for {
		if err := ctx.Err(); err != nil {
			fail(err)
			return
		}
		buf := imgGetChunk()
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if !send(buf[:n]) {
				return // the reader gave up
			}
		} else {
			imgPutChunk(buf)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			p.closeWrite(r.Close())
			return
		}
		if err != nil {
			fail(err)
			return
		}
	}
}

// imgLayerReader is a decompressed layer stream. Close checks what can only
// be checked at the end (the digest) and returns its error.
type imgLayerReader struct {
	io.Reader
	// fwd, when set, takes the decompressed chunks read from Reader, hashes
	// them and writes them to the stream openTo was given.
	fwd     *imgForward
	closers []io.Closer
	check   func() error
	closed  bool
	err     error
}

func (r *imgLayerReader) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	for _, c := range r.closers {
		if err := c.Close(); err != nil && r.err == nil {
			r.err = err
		}
	}
	if r.check != nil && r.err == nil {
		r.err = r.check()
	}
	return r.err
}

// open returns the layer's decompressed tar stream.
func (w *imgWalker) open(j *imgLayerJob) (*imgLayerReader, error) { return w.openTo(j, nil) }

// openTo is open for a fetch into the stream to: the diff ID is then taken
// by the reader's fwd as its chunks go into to, without a copy of them.
func (w *imgWalker) openTo(j *imgLayerJob, to imgStream) (*imgLayerReader, error) {
	if w.src.scheme == SchemeDockerArchive {
		// The archive may hold layers uncompressed, and ggcr would compress
		// them to serve Compressed(): read Uncompressed() and check the
		// diff ID instead.
		rc, err := j.layer.Uncompressed()
		if err != nil {
			return nil, fmt.Errorf("open: %w", err)
		}
		h := newImgHasher()
		cr := &imgCounter{r: io.TeeReader(rc, h), p: w.progress}
		check := imgDigestCheck(h, cr, j.diffID, "diff ID")
		return &imgLayerReader{
			Reader:  cr,
			closers: []io.Closer{rc, h},
			check: func() error {
				if err := check(); err != nil || !cr.eof {
					return err
				}
				j.verified.Store(j.diffKnown)
				return nil
			},
		}, nil
	}
	rc, err := j.layer.Compressed()
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", imgRegistryErrorMaybe(w.src, err))
	}
	lr := &imgLayerReader{closers: []io.Closer{rc}}
	var src io.Reader = rc
	cr := &imgCounter{p: w.progress}
	if w.src.scheme == SchemeOCI && (!j.diffKnown || w.cache.enabled()) {
		// A layout's blobs are plain files: check them where the diff ID
		// cannot be, or where the layer's result may be cached (the key
		// holds the blob digest, and a later hit trusts it without
		// decompressing). Otherwise the diff ID check below already pins
		// every byte scanned: a blob that decompresses to the diff ID the
		// config claims is the layer the config names, whatever its gzip
		// bytes, and hashing it too cost a fifth of an image scan's CPU on
		// two cores. The layout's manifest and config are plain files as
		// well, so checking a blob against them adds no trust the diff ID
		// does not give. (A registry's blob reader checks the digest itself
		// at its end.)
		h := newImgHasher()
		src = io.TeeReader(rc, h)
		lr.closers = append(lr.closers, h)
		lr.check = imgDigestCheck(h, cr, j.digest, "digest")
	}
	cr.r = src
	br := bufio.NewReaderSize(cr, 64<<10)
	magic, _ := br.Peek(4)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			lr.Close()
			return nil, fmt.Errorf("gzip: %w", err)
		}
		lr.Reader = imgDrain{zr, br}
		lr.closers = append([]io.Closer{zr}, lr.closers...)
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(128<<20))
		if err != nil {
			lr.Close()
			return nil, fmt.Errorf("zstd: %w", err)
		}
		lr.Reader = imgDrain{zr, br}
		lr.closers = append([]io.Closer{imgZstdCloser{zr}}, lr.closers...)
	default:
		lr.Reader = br // an uncompressed tar
	}
	// The decompressed stream is hashed as well, and must be the diff ID
	// the config claims: a config that names another image's layer while
	// carrying other bytes is an error for that layer, and never fills the
	// cache under that layer's name. (The blob's own digest is checked by
	// the registry's verifying reader, or above for a layout where it
	// counts.)
	if j.diffKnown {
		ur := &imgCounter{r: lr.Reader}
		var uh interface {
			io.Closer
			Sum([]byte) []byte
		}
		if to != nil {
			lr.fwd = newImgForward(to)
			lr.Reader, uh = ur, lr.fwd
		} else {
			h := newImgHasher()
			lr.Reader, uh = io.TeeReader(ur, h), h
		}
		lr.closers = append(lr.closers, uh)
		blob := lr.check
		check := imgDigestCheck(uh, ur, j.diffID, "diff ID")
		lr.check = func() error {
			if blob != nil {
				if err := blob(); err != nil {
					return err
				}
			}
			if err := check(); err != nil || !ur.eof || !cr.eof {
				return err
			}
			j.verified.Store(true)
			return nil
		}
	}
	return lr, nil
}

// imgDrain reads the decompressed stream and, at its end, what may follow it
// in the blob, so that the blob's digest is checked over every byte.
type imgDrain struct {
	r   io.Reader
	raw io.Reader
}

func (d imgDrain) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err == io.EOF {
		if _, derr := io.Copy(io.Discard, d.raw); derr != nil {
			return n, derr
		}
	}
	return n, err
}

type imgZstdCloser struct{ d *zstd.Decoder }

func (c imgZstdCloser) Close() error { c.d.Close(); return nil }

func imgDigestCheck(h interface{ Sum([]byte) []byte }, cr *imgCounter, want, what string) func() error {
	return func() error {
		if want == "" || !cr.eof {
			return nil
		}
		got := "sha256:" + hex.EncodeToString(h.Sum(nil))
		if got != want {
			says := "manifest"
			if what == "diff ID" {
				says = "config"
			}
			return fmt.Errorf("%s mismatch: content is %s, %s says %s (corrupt or tampered blob)", what, imgShort(got), says, imgShort(want))
		}
		return nil
	}
}

// imgCounter counts bytes for the progress bar and notes the end of stream.
type imgCounter struct {
	r   io.Reader
	p   *imgProgress
	eof bool
}

func (c *imgCounter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.add(int64(n))
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

// imgLimit fails a read past its limit (instead of ending the stream).
type imgLimit struct {
	r    io.Reader
	left int64
	max  int64
}

func (l *imgLimit) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("layer is larger than %d bytes decompressed (the MaxLayerBytes bound)", l.max)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// walkLayer walks one layer's tar stream and hands every regular file to the
// sink. It returns the layer's own events (what it hides below it).
func (w *imgWalker) walkLayer(ctx context.Context, j *imgLayerJob, r io.Reader, hidden *imgHidden, g *errgroup.Group, rs scanners.ResultSink, record bool, stopped *imgStop) (*imgEvents, error) {
	target := w.src.Target().Name
	ev := newImgEvents()
	tr := tar.NewReader(&imgLimit{r: r, left: w.opts.MaxLayerBytes, max: w.opts.MaxLayerBytes})
	entries := 0
	for {
		if err := ctx.Err(); err != nil {
			return ev, err
		}
		if e := stopped.get(); e != nil {
			return ev, e
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			// Read what follows the end-of-archive blocks too, so that the
			// stream's digest is checked.
			if _, err := io.Copy(io.Discard, r); err != nil {
				return ev, imgReadErr(err)
			}
			return ev, nil
		}
		if err != nil {
			return ev, imgReadErr(err)
		}
		entries++
		if entries > w.opts.MaxEntries {
			return ev, fmt.Errorf("more than %d tar entries (the MaxEntries bound)", w.opts.MaxEntries)
		}
		p := path.Clean("/" + hdr.Name)
		dir, base := path.Split(p)
		dir = path.Clean(dir)
		if strings.HasPrefix(base, ".wh.") {
			switch {
			case base == ".wh..wh..opq":
				ev.add(dir, imgOpaque)
			case strings.HasPrefix(base, ".wh..wh."):
				// aufs metadata (.wh..wh.plnk, .wh..wh.aufs): not content.
			default:
				ev.add(path.Join(dir, base[len(".wh."):]), imgDeleted)
			}
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeReg: // (the reader turns old writers' TypeRegA into TypeReg)
		case tar.TypeDir:
			ev.add(p, imgDir)
			continue
		default:
			// Links, devices, fifos: recorded (they hide what is below
			// them), never followed.
			ev.add(p, imgFile)
			continue
		}
		ev.add(p, imgFile)
		a := &scanners.Artifact{
			Kind:       scanners.ArtifactFile,
			Target:     target,
			TargetKind: scanners.KindImage,
			Path:       p,
			Size:       hdr.Size,
			Mode:       hdr.FileInfo().Mode(),
			Layer:      j.diffID,
			LayerIndex: j.index,
			CreatedBy:  j.createdBy,
			Note:       hidden.note(p),
		}
		if hdr.Size <= imgBufferMax {
			// The buffer goes to the sink with the file, which keeps it as
			// the content the checks read (MemContent): one copy of the
			// file, not one here and another in the sink.
			buf := make([]byte, hdr.Size)
			if _, err := io.ReadFull(tr, buf); err != nil {
				return ev, imgReadErr(fmt.Errorf("%s: %w", p, err))
			}
			g.Go(func() error {
				w.hand(j, a, scanners.MemContent(buf), rs, record, stopped)
				return nil
			})
			continue
		}
		w.hand(j, a, tr, rs, record, stopped)
	}
}

func imgReadErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated: %w", err)
	}
	return err
}

// hand gives one artifact to the sink, recording its findings for the cache
// when the sink hands them back.
func (w *imgWalker) hand(j *imgLayerJob, a *scanners.Artifact, r io.Reader, rs scanners.ResultSink, record bool, stopped *imgStop) {
	if !record {
		if err := w.sink.Artifact(a, r); err != nil {
			stopped.set(err)
		}
		return
	}
	rec, err := rs.ArtifactResult(a, r)
	if err != nil {
		stopped.set(err)
		return
	}
	j.record(a, rec) // cache.go
}

// imgStop holds the first error of the sink, which ends the walk.
type imgStop struct {
	mu  sync.Mutex
	err error
}

func (s *imgStop) set(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *imgStop) get() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
