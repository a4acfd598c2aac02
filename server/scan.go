//go:build !mlwarden_sbatch

package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/server/verdict"
)

// scanJob is one image digest being scanned. Everyone who asks for the same
// digest while it runs waits on the same job.
type scanJob struct {
	ref    name.Digest
	auth   authn.Authenticator
	origin string
	done   chan struct{}
	v      *verdict.Verdict
	err    error
}

// coordinator deduplicates scans by digest, runs queued ones on a bounded
// pool of workers with retries, and runs urgent (admission) ones at once.
type coordinator struct {
	s      *Server
	queue  chan *scanJob
	urgent chan struct{} // bounds inline scans

	mu   sync.Mutex
	jobs map[string]*scanJob // by digest, queued or running
	wg   sync.WaitGroup
	ctx  context.Context
}

func newCoordinator(s *Server) *coordinator {
	return &coordinator{
		s:      s,
		queue:  make(chan *scanJob, s.cfg.QueueSize),
		urgent: make(chan struct{}, max(2, s.cfg.Workers)),
		jobs:   map[string]*scanJob{},
		ctx:    context.Background(),
	}
}

func (c *coordinator) start(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	for range c.s.cfg.Workers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-c.queue:
					c.s.metrics.queueDepth.Dec()
					c.run(ctx, j, c.s.cfg.Retries)
				}
			}
		}()
	}
}

func (c *coordinator) stop(ctx context.Context) error {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("scans still running at shutdown: %w", ctx.Err())
	}
}

// errSkipped ends a job for a manifest that is not a runnable image.
var errSkipped = errors.New("not a runnable image")

// errQueueFull is returned by enqueue when the queue is full.
var errQueueFull = errors.New("scan queue full")

// enqueue queues a scan of ref unless one is queued or running. It never
// blocks.
func (c *coordinator) enqueue(ref name.Digest, auth authn.Authenticator, origin string) (*scanJob, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := c.jobs[ref.DigestStr()]; ok {
		return j, nil
	}
	j := &scanJob{ref: ref, auth: auth, origin: origin, done: make(chan struct{})}
	select {
	case c.queue <- j:
		c.jobs[ref.DigestStr()] = j
		c.s.metrics.queueDepth.Inc()
		return j, nil
	default:
		c.s.metrics.queueDropped.Inc()
		return nil, errQueueFull
	}
}

// now starts a scan of ref at once, outside the queue, unless one is queued
// or running, and returns the job to wait on. An inline scan holds one of
// a few slots, so it is bounded: it waits at most the scan deadline for a
// slot and runs at most the scan deadline (the admission that asked cannot
// use a later answer anyway). One that did not get a slot, or did not
// finish, is handed to the queue, whose workers finish it under the queued
// scans' bound and keep the verdict for the next admission; its waiters
// are told so. A registry that stalls every scan therefore holds a slot
// for one deadline at a time, never for good.
func (c *coordinator) now(ref name.Digest, auth authn.Authenticator, origin string) *scanJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := c.jobs[ref.DigestStr()]; ok {
		return j
	}
	j := &scanJob{ref: ref, auth: auth, origin: origin, done: make(chan struct{})}
	c.jobs[ref.DigestStr()] = j
	ctx := c.ctx
	deadline := c.s.cfg.ScanDeadline
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		wait := time.NewTimer(deadline)
		defer wait.Stop()
		select {
		case c.urgent <- struct{}{}:
		case <-wait.C:
			c.handOff(j, fmt.Errorf("no inline scan slot free within %s", deadline))
			return
		case <-ctx.Done():
			c.finish(j, nil, ctx.Err())
			return
		}
		sctx, cancel := context.WithTimeout(ctx, deadline)
		v, err := c.scanOnce(sctx, j)
		// Read before cancel, which would make every failure look like
		// the deadline.
		timedOut := errors.Is(sctx.Err(), context.DeadlineExceeded)
		cancel()
		<-c.urgent
		switch {
		case err == nil || errors.Is(err, errSkipped):
			c.finish(j, v, err)
		case ctx.Err() == nil && timedOut:
			c.handOff(j, fmt.Errorf("the inline scan did not finish within %s", deadline))
		default:
			c.s.metrics.scanFailures.Inc()
			c.s.log.Warn("scan failed", "image", j.ref.String(), "attempt", 1, "err", err)
			c.finish(j, nil, err)
		}
	}()
	return j
}

// errHandedOff is the error of an inline job handed to the queue.
type errHandedOff struct{ why error }

func (e errHandedOff) Error() string { return e.why.Error() + "; the scan goes on in the queue" }

// handOff ends an inline job that could not run in time, telling its
// waiters why, and queues a scan of the same image.
func (c *coordinator) handOff(j *scanJob, why error) {
	c.finish(j, nil, errHandedOff{why})
	if _, err := c.enqueue(j.ref, j.auth, j.origin); err != nil {
		c.s.log.Warn("not queued", "image", j.ref.String(), "err", err)
		return
	}
	c.s.log.Info("inline scan handed to the queue", "image", j.ref.String(), "reason", why.Error())
}

// run scans j, retrying with doubling back-off, and keeps the verdict.
func (c *coordinator) run(ctx context.Context, j *scanJob, retries int) {
	s := c.s
	backoff := s.cfg.RetryBackoff
	var err error
	for attempt := 0; ; attempt++ {
		var v *verdict.Verdict
		v, err = c.scanOnce(ctx, j)
		if err == nil || errors.Is(err, errSkipped) {
			c.finish(j, v, err)
			return
		}
		s.metrics.scanFailures.Inc()
		s.log.Warn("scan failed", "image", j.ref.String(), "attempt", attempt+1, "err", err)
		if attempt >= retries || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff *= 2
	}
	c.finish(j, nil, err)
}

func (c *coordinator) scanOnce(ctx context.Context, j *scanJob) (*verdict.Verdict, error) {
	s := c.s
	if s.scanner == nil {
		return nil, errors.New("no image scanner configured")
	}
	// Another replica may have scanned it since it was queued.
	if v, err := s.store.Get(ctx, j.ref, s.rulesVersion); err == nil {
		return v, nil
	}
	if j.origin == "events" {
		// Whatever the registry announces, not only images: skip the rest.
		why, err := s.notRunnable(ctx, j.ref, j.auth)
		if err != nil {
			return nil, err
		}
		if why != "" {
			s.log.Info("not scanned", "image", j.ref.String(), "reason", "not a runnable image: "+why)
			return nil, errSkipped
		}
	}
	s.metrics.inFlight.Inc()
	defer s.metrics.inFlight.Dec()
	if s.scanTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.scanTimeout)
		defer cancel()
	}
	start := time.Now()
	res, err := s.scanner.ScanImage(ctx, ScanRequest{Ref: j.ref, Auth: j.auth})
	if err != nil {
		return nil, err // callers name the image
	}
	v := verdict.FromResult(j.ref, s.rulesVersion, res, s.now())
	if err := s.store.Put(ctx, j.ref, v); err != nil {
		// The verdict is still good for this answer; the next one rescans.
		s.log.Error("keep verdict", "image", j.ref.String(), "err", err)
	}
	s.log.Info("scanned", "image", j.ref.String(), "origin", j.origin, "seconds", time.Since(start).Seconds(),
		"critical", v.Summary.Critical, "high", v.Summary.High, "medium", v.Summary.Medium,
		"low", v.Summary.Low, "errors", len(v.Errors))
	return v, nil
}

func (c *coordinator) finish(j *scanJob, v *verdict.Verdict, err error) {
	c.mu.Lock()
	delete(c.jobs, j.ref.DigestStr())
	c.mu.Unlock()
	j.v, j.err = v, err
	result := "ok"
	switch {
	case errors.Is(err, errSkipped):
		result = "skipped"
	case err != nil:
		result = "error"
	}
	c.s.metrics.scans.WithLabelValues(j.origin, result).Inc()
	close(j.done)
}

// tagCache remembers what digest a tag resolved to for a short time, so that
// admission of a tagged image does not ask the registry every time.
type tagCache struct {
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	m   map[string]tagEntry
}

type tagEntry struct {
	d   name.Digest
	exp time.Time
}

const tagCacheMax = 10000

func newTagCache(ttl time.Duration, now func() time.Time) *tagCache {
	return &tagCache{ttl: ttl, now: now, m: map[string]tagEntry{}}
}

// resolve returns ref as a digest reference, asking the registry (HEAD on the
// manifest) for a tag.
func (s *Server) resolve(ctx context.Context, ref name.Reference, opts ...remote.Option) (name.Digest, error) {
	if d, ok := ref.(name.Digest); ok {
		return d, nil
	}
	key := ref.Name()
	t := s.tags
	t.mu.Lock()
	e, ok := t.m[key]
	t.mu.Unlock()
	if ok && t.now().Before(e.exp) {
		return e.d, nil
	}
	o := append([]remote.Option{remote.WithContext(ctx)}, s.remoteOpts...)
	o = append(o, opts...)
	desc, err := remote.Head(ref, o...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("resolve %s: %w", ref.Name(), err)
	}
	d := ref.Context().Digest(desc.Digest.String())
	t.mu.Lock()
	if len(t.m) >= tagCacheMax {
		clear(t.m)
	}
	t.m[key] = tagEntry{d: d, exp: t.now().Add(t.ttl)}
	t.mu.Unlock()
	return d, nil
}
