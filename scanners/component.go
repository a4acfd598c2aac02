package scanners

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"slices"
	"strings"
	"sync"
)

// ComponentKind says what a component is. The values are part of the JSON
// report.
type ComponentKind string

// Component kinds.
const (
	// ComponentModel is a model file: weights, a checkpoint, a serialized
	// estimator (Format says which).
	ComponentModel ComponentKind = "model"
	// ComponentLayer is one layer of an image target (Layer is its digest,
	// Size its compressed size).
	ComponentLayer ComponentKind = "layer"
	// ComponentCUDA is a CUDA version the target declares (Version; Path and
	// Line where, Properties["declared-as"] how).
	ComponentCUDA ComponentKind = "cuda"
	// ComponentFramework is an ML framework version the target declares
	// (torch==2.4.0: Name and Version).
	ComponentFramework ComponentKind = "framework"
	// ComponentSignature is a signature that verified: Path is the
	// signature file, Subject what it covers, Signer who signed it.
	ComponentSignature ComponentKind = "signature"
)

// Component is one thing a target is made of, as a bill of materials lists
// it: a model file with its format and digest, an image layer, a declared
// CUDA or framework version, a verified signature. Sources and checks report
// them with AddComponent; the dispatcher collects them per target into
// Result.Components. Fields that do not apply are empty.
type Component struct {
	Kind   ComponentKind `json:"kind"`
	Target string        `json:"target"`
	Path   string        `json:"path,omitempty"`
	Line   int           `json:"line,omitempty"`
	Name   string        `json:"name,omitempty"`
	// Version is a declared version (CUDA 12.1, torch 2.4.0).
	Version string `json:"version,omitempty"`
	// Format is a model file's format ("safetensors", "PyTorch zip").
	Format string `json:"format,omitempty"`
	// License is a model's licence as an SPDX identifier (or LicenseRef-…),
	// read from its card, metadata or annotations; empty when unknown.
	License string `json:"license,omitempty"`
	Size    int64  `json:"size,omitempty"`
	// SHA256 is the content's digest in hex, when it is known: the content
	// was read whole anyway, the source knows it (a Hub LFS object), or
	// hashing was asked for (--format cyclonedx).
	SHA256 string `json:"sha256,omitempty"`
	Layer  string `json:"layer,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Subject and Signer are what a verified signature covers and who made it.
	Subject string `json:"subject,omitempty"`
	Signer  string `json:"signer,omitempty"`
	// Properties are further facts, such as a layer's "index" and
	// "created_by", or a model card's "license".
	Properties map[string]string `json:"properties,omitempty"`
}

// Describer is implemented by a check that can say what an artifact is for
// the bill of materials (the models check names a model file's format). The
// dispatcher calls it with the artifact's head, as Wants; it must be cheap.
type Describer interface {
	Describe(a *Artifact, head []byte) (Component, bool)
}

type componentsKey struct{}

// components collects one target's components.
type components struct {
	mu   sync.Mutex
	list []Component
}

// AddComponent records components of the target being walked, when ctx is
// one the dispatcher handed to Source.Walk or Scanner.Scan (else it does
// nothing). Target is filled when empty.
func AddComponent(ctx context.Context, cs ...Component) {
	c, _ := ctx.Value(componentsKey{}).(*components)
	if c == nil || len(cs) == 0 {
		return
	}
	c.mu.Lock()
	c.list = append(c.list, cs...)
	c.mu.Unlock()
}

// EditComponents calls edit on each component recorded so far for the
// target whose walk ctx belongs to: the context FinishTarget is called
// with. A check that judges the target as a whole fills in there what only
// the whole tells, such as a model file's licence, read from the card
// beside it. It does nothing for another ctx.
func EditComponents(ctx context.Context, edit func(*Component)) {
	c, _ := ctx.Value(componentsKey{}).(*components)
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.list {
		edit(&c.list[i])
	}
}

var componentOrder = map[ComponentKind]int{ComponentLayer: 0, ComponentModel: 1, ComponentFramework: 2, ComponentCUDA: 3, ComponentSignature: 4}

// sorted returns the components of target in report order, duplicates (the
// same fact found twice) dropped.
func (c *components) sorted(target string) []Component {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.list)
	for i := range out {
		if out[i].Target == "" {
			out[i].Target = target
		}
	}
	key := func(x Component) string {
		var b strings.Builder
		for _, s := range []string{x.Path, x.Name, x.Version, x.Layer, x.Commit, x.Subject, x.Signer} {
			b.WriteString(s)
			b.WriteByte(0)
		}
		return b.String()
	}
	slices.SortStableFunc(out, func(a, b Component) int {
		ia, ib := indexOf(a), indexOf(b)
		return cmp.Or(
			cmp.Compare(componentOrder[a.Kind], componentOrder[b.Kind]),
			cmp.Compare(ia, ib),
			strings.Compare(a.Path, b.Path),
			cmp.Compare(a.Line, b.Line),
			strings.Compare(key(a), key(b)),
		)
	})
	return slices.CompactFunc(out, func(a, b Component) bool {
		return a.Kind == b.Kind && a.Line == b.Line && key(a) == key(b) && a.Target == b.Target
	})
}

// indexOf is a layer's position, for ordering layers as the image has them.
func indexOf(c Component) int {
	n := 0
	for _, r := range c.Properties["index"] {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// describe asks the checks that describe artifacts what a is.
func (s *sink) describe(a *Artifact, head []byte) *Component {
	for _, sc := range s.d.scanners {
		d, ok := sc.(Describer)
		if !ok {
			continue
		}
		if c, ok := d.Describe(a, head); ok {
			if c.Kind == "" {
				c.Kind = ComponentModel
			}
			c.Target, c.Path, c.Layer, c.Commit = a.Target, a.Path, a.Layer, a.Commit
			if c.Size == 0 {
				c.Size = a.Size
			}
			return &c
		}
	}
	return nil
}

// addComponent records c, with the SHA-256 of its content when hash is set
// and the content is at hand (r, size).
func (s *sink) addComponent(c *Component, r io.ReaderAt, size int64, hash bool) {
	if !s.hashes(c) || !hash || r == nil {
		if c != nil && s.comps != nil {
			AddComponent(s.ctx, *c)
		}
		return
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
		h = nil
	}
	s.addComponentSum(c, h, size)
}

// hashes reports whether c is a component still to be hashed.
func (s *sink) hashes(c *Component) bool {
	return c != nil && s.comps != nil && c.SHA256 == ""
}

// addComponentSum records c with the digest h took of its size bytes (nil:
// none taken).
func (s *sink) addComponentSum(c *Component, h hash.Hash, size int64) {
	if c == nil || s.comps == nil {
		return
	}
	if h != nil && c.SHA256 == "" {
		c.SHA256 = hex.EncodeToString(h.Sum(nil))
		c.Size = size
	}
	AddComponent(s.ctx, *c)
}

// localKind reports whether a target of kind k is read from the local disk,
// where reading a file whole to hash it costs no download.
func localKind(k TargetKind) bool {
	switch k {
	case KindDir, KindFile, KindRepo, KindScript, "":
		return true
	}
	return false
}
