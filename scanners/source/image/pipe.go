package image

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// imgStream carries a layer's decompressed tar stream from the goroutine that
// fetches and decompresses it (write, closeWrite) to the walk (Read,
// closeRead). Two kinds: imgPipe, in memory, for the layer being walked, and
// imgSpill, a ring in a temporary file, for layers fetched ahead.
type imgStream interface {
	io.Reader
	// write queues b, a chunk from imgGetChunk that the stream now owns;
	// false means the reader has gone (or the stream failed).
	write(b []byte) bool
	// closeWrite ends the stream with an error (nil: io.EOF).
	closeWrite(err error)
	// closeRead abandons the stream; the writer stops at its next write.
	closeRead()
}

// imgPipe is a pipe with a bounded buffer of chunks, so that a layer can be
// fetched and decompressed ahead of the walk. The writer is one goroutine;
// closeWrite ends the stream with an error (nil: io.EOF).
type imgPipe struct {
	ch   chan []byte
	done chan struct{}
	once sync.Once
	err  error // written before ch is closed
	cur  []byte
	buf  []byte // the chunk cur is a slice of, returned to the pool when read
}

// imgChunks recycles the pipe's chunks (a layer is streamed through
// hundreds of them).
var imgChunks = sync.Pool{New: func() any { b := make([]byte, imgChunk); return &b }}

func imgGetChunk() []byte { return (*imgChunks.Get().(*[]byte))[:imgChunk] }

func imgPutChunk(b []byte) {
	if cap(b) == imgChunk {
		b = b[:imgChunk]
		imgChunks.Put(&b)
	}
}

func newImgPipe(chunks int) *imgPipe {
	return &imgPipe{ch: make(chan []byte, max(chunks, 1)), done: make(chan struct{})}
}

// write queues b; false means the reader has gone.
func (p *imgPipe) write(b []byte) bool {
	select {
	case p.ch <- b:
		return true
	case <-p.done:
		return false
	}
}

func (p *imgPipe) closeWrite(err error) {
	p.err = err
	close(p.ch)
}

// closeRead abandons the stream; the writer stops at its next write.
func (p *imgPipe) closeRead() { p.once.Do(func() { close(p.done) }) }

func (p *imgPipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.buf != nil {
			imgPutChunk(p.buf)
			p.buf = nil
		}
		c, ok := <-p.ch
		if !ok {
			if p.err != nil {
				return 0, p.err
			}
			return 0, io.EOF
		}
		p.cur, p.buf = c, c
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// imgSpill is a pipe whose buffer is a ring of size bytes in an unlinked
// temporary file: a layer fetched ahead is decompressed and hashed into it
// while the walk is still on the layers above, on another core, instead of
// stopping after imgPrefetchBuffer bytes; the walk then reads it from the page
// cache. The writer waits while the ring is full, so a layer never takes more
// than size bytes of disk, and nothing of it is held in the process's memory.
type imgSpill struct {
	f    *os.File
	size int64

	mu         sync.Mutex
	cond       sync.Cond
	w, r       int64 // bytes written and read so far
	err        error // the writer's, read once everything written is read
	wdone      bool
	rdone      bool
	fileClosed bool
}

// newImgSpill creates the ring's file in dir (os.TempDir when empty).
func newImgSpill(dir string, size int64) (*imgSpill, error) {
	f, err := os.CreateTemp(dir, "mlwarden-layer-*")
	if err != nil {
		return nil, err
	}
	// Its name is ours, and it is gone once the scan has closed it.
	os.Remove(f.Name())
	s := &imgSpill{f: f, size: size}
	s.cond.L = &s.mu
	return s, nil
}

func (s *imgSpill) write(b []byte) bool {
	defer imgPutChunk(b)
	for len(b) > 0 {
		s.mu.Lock()
		for s.w-s.r == s.size && !s.rdone {
			s.cond.Wait()
		}
		if s.rdone || s.wdone {
			s.wdone = true
			s.closeFileLocked()
			s.mu.Unlock()
			return false
		}
		off := s.w % s.size
		n := min(int64(len(b)), s.size-(s.w-s.r), s.size-off)
		s.mu.Unlock()
		// The reader never reads [off, off+n): it is past what was written.
		if _, err := s.f.WriteAt(b[:n], off); err != nil {
			s.closeWrite(fmt.Errorf("spill the layer to a temporary file: %w", err))
			return false
		}
		s.mu.Lock()
		s.w += n
		s.cond.Broadcast()
		s.mu.Unlock()
		b = b[n:]
	}
	return true
}

func (s *imgSpill) closeWrite(err error) {
	s.mu.Lock()
	if !s.wdone {
		s.err, s.wdone = err, true
	}
	s.cond.Broadcast()
	s.closeFileLocked()
	s.mu.Unlock()
}

func (s *imgSpill) closeRead() {
	s.mu.Lock()
	s.rdone = true
	s.cond.Broadcast()
	s.closeFileLocked()
	s.mu.Unlock()
}

// closeFileLocked closes the file once both sides are done with it.
func (s *imgSpill) closeFileLocked() {
	if s.rdone && s.wdone && !s.fileClosed {
		s.fileClosed = true
		s.f.Close()
	}
}

func (s *imgSpill) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	for s.w == s.r && !s.wdone && !s.rdone {
		s.cond.Wait()
	}
	if s.rdone {
		s.mu.Unlock()
		return 0, io.ErrClosedPipe
	}
	if s.w == s.r {
		err := s.err
		s.mu.Unlock()
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	off := s.r % s.size
	n := min(int64(len(p)), s.w-s.r, s.size-off)
	s.mu.Unlock()
	// The writer never writes [off, off+n) before it has been read.
	m, err := s.f.ReadAt(p[:n], off)
	s.mu.Lock()
	s.r += int64(m)
	s.cond.Broadcast()
	s.mu.Unlock()
	if m < int(n) {
		return m, fmt.Errorf("read the layer back from its temporary file: %w", err)
	}
	return m, nil
}

// imgHasher is a SHA-256 that hashes in a goroutine of its own what is
// written to it, so that a layer's blob and decompressed stream are hashed
// beside its decompression, on other cores, instead of in turn with it. What
// is written is copied into chunks; at most imgHashQueue of them wait.
// Write is called from one goroutine; Sum (and Close, which Sum calls)
// waits for everything written to be hashed. Close must be called (the
// layer reader's Close does) for the goroutine to end.
type imgHasher struct {
	h    hash.Hash
	ch   chan []byte
	done chan struct{}
	cur  []byte
	once sync.Once
}

const imgHashQueue = 8

func newImgHasher() *imgHasher {
	a := &imgHasher{h: sha256.New(), ch: make(chan []byte, imgHashQueue), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			a.h.Write(b)
			imgPutChunk(b)
		}
	}()
	return a
}

func (a *imgHasher) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if a.cur == nil {
			a.cur = imgGetChunk()[:0]
		}
		k := copy(a.cur[len(a.cur):cap(a.cur)], p)
		a.cur = a.cur[:len(a.cur)+k]
		p = p[k:]
		if len(a.cur) == cap(a.cur) {
			a.ch <- a.cur
			a.cur = nil
		}
	}
	return n, nil
}

// Close hashes what is left and ends the goroutine.
func (a *imgHasher) Close() error {
	a.once.Do(func() {
		if len(a.cur) > 0 {
			a.ch <- a.cur
		} else if a.cur != nil {
			imgPutChunk(a.cur)
		}
		a.cur = nil
		close(a.ch)
		<-a.done
	})
	return nil
}

// Sum appends the hash of everything written to b.
func (a *imgHasher) Sum(b []byte) []byte {
	a.Close()
	return a.h.Sum(b)
}

// imgForward is a SHA-256 of a decompressed stream that hashes, in a
// goroutine of its own, the chunks the fetch reads, and then writes each to
// the stream the walk reads: the diff ID is taken beside decompression
// without copying the stream, as imgHasher must for writers that reuse their
// buffer. write is called from one goroutine; Close (and Sum, which calls
// it) waits until every chunk is hashed and in the stream, so the stream is
// ended after them.
type imgForward struct {
	h    hash.Hash
	to   imgStream
	ch   chan []byte
	done chan struct{}
	gone atomic.Bool // the stream's reader has gone
	once sync.Once
}

func newImgForward(to imgStream) *imgForward {
	f := &imgForward{h: sha256.New(), to: to, ch: make(chan []byte, imgHashQueue), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for b := range f.ch {
			f.h.Write(b)
			// A stream that refuses b has let it go, or put it back
			// itself: never put back here too.
			if f.gone.Load() || !f.to.write(b) {
				f.gone.Store(true)
			}
		}
	}()
	return f
}

// write hands over b, a chunk from imgGetChunk; false means the stream's
// reader has gone.
func (f *imgForward) write(b []byte) bool {
	if f.gone.Load() {
		imgPutChunk(b)
		return false
	}
	f.ch <- b
	return true
}

// Close waits for every chunk written to be hashed and in the stream.
func (f *imgForward) Close() error {
	f.once.Do(func() {
		close(f.ch)
		<-f.done
	})
	return nil
}

// Sum appends the hash of everything written to b.
func (f *imgForward) Sum(b []byte) []byte {
	f.Close()
	return f.h.Sum(b)
}
