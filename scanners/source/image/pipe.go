package image

import (
	"io"
	"sync"
)

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
