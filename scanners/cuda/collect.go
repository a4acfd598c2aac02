package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mlwarden/mlwarden/scanners"
)

// Collector is a scanners.Sink that gathers everything one target declares
// about CUDA, across all its artifacts: an image's config and its files
// (compat libraries, PyTorch builds) are combined into one Declared, which
// a scanner inside the dispatcher cannot do because it sees one artifact at
// a time. `mlwarden cuda check` walks each target with one.
type Collector struct {
	mu   sync.Mutex
	decl Declared
	errs []scanners.Error
}

// Artifact reads one artifact's declarations.
func (c *Collector) Artifact(a *scanners.Artifact, r io.Reader) error {
	head := make([]byte, scanners.HeadSize)
	var n int
	var err error
	if ra, ok := r.(io.ReaderAt); ok {
		n, err = ra.ReadAt(head, 0)
		r = io.NewSectionReader(ra, 0, 1<<62)
	} else {
		n, err = io.ReadFull(r, head)
		r = io.MultiReader(bytes.NewReader(head[:n]), r)
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		c.Error(scanners.Error{Target: a.Target, Path: a.Path, Message: fmt.Sprintf("read: %v", err)})
		return nil
	}
	head = head[:n]
	if !wants(a, head) {
		return nil
	}
	limit := int64(maxText)
	if a.Kind == scanners.ArtifactImageConfig {
		limit = maxConfig
	}
	var data []byte
	if a.Kind == scanners.ArtifactImageConfig || classify(a.Path, head) != kindPathOnly {
		data, err = io.ReadAll(io.LimitReader(r, limit))
		if err != nil {
			c.Error(scanners.Error{Target: a.Target, Path: a.Path, Message: fmt.Sprintf("read: %v", err)})
			return nil
		}
	}
	d, err := Extract(a, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))))
	if err != nil {
		c.Error(scanners.Error{Target: a.Target, Path: a.Path, Message: err.Error()})
		return nil
	}
	c.mu.Lock()
	c.decl.Merge(d)
	c.mu.Unlock()
	return nil
}

// Error records an artifact that could not be read.
func (c *Collector) Error(e scanners.Error) {
	c.mu.Lock()
	c.errs = append(c.errs, e)
	c.mu.Unlock()
}

// Declared returns what the target declares.
func (c *Collector) Declared() Declared {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.decl
}

// Errors returns the artifacts that could not be read.
func (c *Collector) Errors() []scanners.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]scanners.Error(nil), c.errs...)
}

func wants(a *scanners.Artifact, head []byte) bool {
	switch a.Kind {
	case scanners.ArtifactImageConfig:
		return true
	case scanners.ArtifactFile:
		return classify(a.Path, head) != kindNone
	}
	return false
}

// EvaluateAll evaluates d on every host of the scanner.
func (s *Scanner) EvaluateAll(d Declared) []Evaluation {
	out := make([]Evaluation, 0, len(s.pools))
	for _, p := range s.pools {
		out = append(out, Evaluate(s.table, d, p.Name, p.Host))
	}
	return out
}

// HostNote says why the scanner has no host facts ("" when it has some).
func (s *Scanner) HostNote() string { return s.hostNote }
