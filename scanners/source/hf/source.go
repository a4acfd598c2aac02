package hf

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/ranged"
)

// hubSource is one hf: target.
type hubSource struct {
	ref Ref
	o   Options
	c   *client

	mu     sync.Mutex
	target scanners.Target
	stats  *stats
}

// Open opens the target hf:REF (ref is what follows "hf:"). It checks the
// reference, the endpoint and where the token goes; the Hub is first
// contacted by Walk, so that a failure is the target's error in the report.
func Open(ctx context.Context, ref string, o Options) (scanners.Source, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults()
	c, err := newClient(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	return &hubSource{ref: r, o: o, c: c, target: scanners.Target{Name: r.String(), Kind: scanners.KindHub}}, nil
}

func (s *hubSource) Target() scanners.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.target
	t.Notes = slices.Clone(t.Notes)
	t.Properties = maps.Clone(t.Properties)
	if s.stats != nil {
		t.Notes = append(t.Notes, s.stats.notes()...)
	}
	return t
}

func (s *hubSource) Walk(ctx context.Context, sink scanners.Sink) error {
	commit, info, err := s.c.revision(ctx, s.ref)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.target.Digest = commit
	s.target.Properties = info.properties()
	if s.ref.Rev() != commit {
		s.target.Notes = append(s.target.Notes, fmt.Sprintf("revision %s is commit %s: every file was read at that commit", s.ref.Rev(), commit))
	}
	s.mu.Unlock()
	files, err := s.c.tree(ctx, s.ref, commit)
	if err != nil {
		return err
	}
	st := newStats(s.o.DownloadLimit)
	rfs := newRepoFS(ctx, s, commit, st)
	name := s.target.Name
	for i, f := range files {
		if i%4096 == 4095 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !fs.ValidPath(f.Path) || strings.Contains(f.Path, "\\") {
			sink.Error(scanners.Error{Target: name, Path: f.Path, Message: "the tree lists a path that is not a valid relative name: not scanned"})
			continue
		}
		if rfs.files[f.Path] != nil {
			sink.Error(scanners.Error{Target: name, Path: f.Path, Message: "the tree lists this path twice: the second was not scanned"})
			continue
		}
		if err := rfs.add(f, s.o.MaxFiles); err != nil {
			return fmt.Errorf("%s: list files: %w", s.ref, err)
		}
	}
	if err := rfs.index(ctx); err != nil {
		return err
	}
	st.total = 0
	for _, f := range rfs.files {
		st.total += f.Size
	}
	st.count = len(rfs.files)
	scanners.ProgressOf(ctx).Expect(int64(st.count), st.total)
	s.mu.Lock()
	s.stats = st
	s.mu.Unlock()

	// The result cache (results.go) needs a sink that hands results back.
	rs, _ := sink.(scanners.ResultSink)
	res := newHubResults(s.o)
	if rs == nil {
		res = nil
	}
	jobs := make(chan *File)
	var wg sync.WaitGroup
	var stopOnce sync.Once
	var stopErr error
	for range s.o.Workers {
		wg.Go(func() {
			for f := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if e := res.load(ctx, f); e != nil {
					rs.Replay(name, e.record(rfs))
					st.replayed(f.Path, f.Size)
					scanners.ProgressOf(ctx).Scanned(f.Size) // done, as if handed over
					continue
				}
				a := &scanners.Artifact{
					Kind:       scanners.ArtifactFile,
					Target:     name,
					TargetKind: scanners.KindHub,
					Path:       f.Path,
					Size:       f.Size,
					Mode:       0o644,
					FS:         rfs,
				}
				var err error
				var rd *ranged.Reader
				if res != nil && lfsOID(f) != "" {
					w, view := newWholeHash(), &artifactFS{r: rfs}
					a.FS = view
					rd = rfs.hashedReader(f, w)
					var rec scanners.Record
					if rec, err = rs.ArtifactResult(a, rd); err == nil {
						res.store(ctx, f, rec, w, view)
					}
				} else {
					rd = rfs.reader(f)
					err = sink.Artifact(a, rd)
				}
				if err != nil {
					stopOnce.Do(func() { stopErr = err })
				}
				st.file(f.Path, rd.Fetched())
			}
		})
	}
	for _, p := range rfs.order {
		if ctx.Err() != nil {
			break
		}
		jobs <- rfs.files[p]
	}
	close(jobs)
	wg.Wait()
	if stopErr != nil {
		return stopErr
	}
	return ctx.Err()
}

// stats is what a target downloaded, for its notes.
type stats struct {
	budget *ranged.Budget
	total  int64
	count  int

	mu          sync.Mutex
	perFile     map[string]int64 // bytes fetched by the walk's reads
	replays     []string         // files whose results came from the result cache
	replayBytes int64            // their bytes
	verified    []string         // digests taken from the tree, not the bytes
	toVerify    map[string]int64 // files opened by a check to hash them
}

func newStats(limit int64) *stats {
	return &stats{budget: ranged.NewBudget(limit), perFile: map[string]int64{}, toVerify: map[string]int64{}}
}

func (s *stats) file(p string, n int64) {
	s.mu.Lock()
	s.perFile[p] += n
	s.mu.Unlock()
}

func (s *stats) replayed(p string, size int64) {
	s.mu.Lock()
	s.replays = append(s.replays, p)
	s.replayBytes += size
	s.mu.Unlock()
}

func (s *stats) digestFromTree(p string) {
	s.mu.Lock()
	if !slices.Contains(s.verified, p) {
		s.verified = append(s.verified, p)
	}
	s.mu.Unlock()
}

func (s *stats) fetchedToVerify(p string, n int64) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.toVerify[p] += n
	s.mu.Unlock()
}

// notes say what was downloaded of the repository, what the limit left
// out and how digests were taken.
func (s *stats) notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	read := 0
	for _, n := range s.perFile {
		if n > 0 {
			read++
		}
	}
	used := s.budget.Used()
	pct := 0.0
	if s.total > 0 {
		pct = 100 * float64(used) / float64(s.total)
	}
	out := []string{fmt.Sprintf("downloaded %s of the repository's %s (%.3f%%) in %d ranged requests, from %d of its %d files: only what the checks read",
		ranged.FormatBytes(used), ranged.FormatBytes(s.total), pct, s.budget.Requests(), read, s.count)}
	if len(s.replays) > 0 {
		r := slices.Sorted(slices.Values(s.replays))
		out = append(out, fmt.Sprintf("%d Git LFS file(s) (%s) not downloaded: their results for these rules were in the result cache, by the sha256 and path of each: %s",
			len(r), ranged.FormatBytes(s.replayBytes), list(r)))
	}
	if refused := s.budget.Refused(); len(refused) > 0 {
		out = append(out, fmt.Sprintf("--download-limit %s reached: %d file(s) not scanned in full: %s", ranged.FormatBytes(s.budget.Limit()), len(refused), list(refused)))
	}
	if len(s.verified) > 0 {
		v := slices.Sorted(slices.Values(s.verified))
		out = append(out, fmt.Sprintf("%d file(s) checked against a manifest or signature by the sha256 the Hub's tree lists for them (Git LFS), without downloading them: %s", len(v), list(v)))
	}
	if len(s.toVerify) > 0 {
		var names []string
		var n int64
		for p, b := range s.toVerify {
			names = append(names, p)
			n += b
		}
		slices.Sort(names)
		out = append(out, fmt.Sprintf("%d file(s) downloaded (%s) to hash them for a manifest or signature, since the tree lists no sha256 for them: %s", len(names), ranged.FormatBytes(n), list(names)))
	}
	return out
}

// list names at most five paths.
func list(ps []string) string {
	shown := ps[:min(len(ps), 5)]
	s := strings.Join(shown, ", ")
	if len(ps) > len(shown) {
		s += fmt.Sprintf(" and %d more", len(ps)-len(shown))
	}
	return s
}
