// Package script is the source of one script held in memory: a batch
// script read from standard input, or the one the sbatch hook checks. It
// is apart from package source so that the sbatch hook's build
// (mlwarden-sbatch) links it without the image, Hub and git sources.
package script

import (
	"context"
	"fmt"
	"io"

	"github.com/mlwarden/mlwarden/scanners"
)

// MaxSize is the largest script read; a larger one is an error of its
// source's walk.
const MaxSize = 16 << 20

// source is one script held in memory.
type source struct {
	name string
	data []byte
	err  error
}

// Open reads one script into a source of kind "script". name is used as
// the target and path.
func Open(name string, r io.Reader) scanners.Source {
	data, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err == nil && len(data) > MaxSize {
		err = fmt.Errorf("script is larger than %d bytes", MaxSize)
	}
	return &source{name: name, data: data, err: err}
}

func (s *source) Target() scanners.Target {
	return scanners.Target{Name: s.name, Kind: scanners.KindScript}
}

func (s *source) Walk(ctx context.Context, sink scanners.Sink) error {
	if s.err != nil {
		return fmt.Errorf("read script: %w", s.err)
	}
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: s.name, TargetKind: scanners.KindScript, Path: s.name, Size: int64(len(s.data))}
	return sink.Artifact(a, &readerAt{data: s.data})
}

// readerAt is an in-memory io.Reader and io.ReaderAt.
type readerAt struct {
	data []byte
	off  int
}

func (r *readerAt) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}

func (r *readerAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.data)) {
		return 0, io.EOF
	}
	n := copy(p, r.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
