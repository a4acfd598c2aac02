package models

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mlwarden/mlwarden/internal/unpack"
	"github.com/mlwarden/mlwarden/scanners"
)

// Header checks for other readers of archives (scanners/archive, which
// opens archives for the text checks): they open a 7z or xz file only after
// the same check the models check makes, so that no header decides how much
// memory a decoder allocates.

// Check7z checks a 7z archive's header before github.com/bodgit/sevenzip
// reads it (that reader allocates every count the header states). It
// returns the folders whose members must not be opened (a dictionary over
// l.MaxDict, zstd's unbounded window), with why, and an error for a header
// over a limit (IsLimit) or corrupt. Zero fields of l take DefaultLimits.
func Check7z(ra io.ReaderAt, size int64, l Limits) (map[int]error, error) {
	return check7z(ra, size, withDefaults(l))
}

// Open7z opens a 7z archive that Check7z passed. github.com/bodgit/sevenzip
// v1.6.0 indexes its header's tables as the header says (a substreams
// digest list shorter than the files it covers panics in readHeader,
// found by Fuzz7z), so a panic there is a corrupt archive, an error like
// any other it returns, not the end of the scan.
func Open7z(ra io.ReaderAt, size int64) (zr *unpack.SevenZip, err error) {
	defer func() {
		if p := recover(); p != nil {
			zr, err = nil, fmt.Errorf("corrupt header (%v)", p)
		}
	}()
	return unpack.Open7z(ra, size)
}

// CheckXz checks every block header of an xz file (read from its index at
// the end) and refuses one whose LZMA2 dictionary is over maxDict (IsLimit).
func CheckXz(ra io.ReaderAt, size, maxDict int64) error {
	return checkXz(ra, size, maxDict)
}

// IsLimit reports whether an error of Check7z or CheckXz is a limit
// reached, not corruption.
func IsLimit(err error) bool {
	return errors.Is(err, errSevenZipLimit) || errors.Is(err, errDict)
}

func withDefaults(l Limits) Limits {
	s := &Scanner{lim: DefaultLimits()}
	WithLimits(l)(s)
	return s.lim
}

// ReadsArchives says that the models check opens archives itself (it looks
// for pickles in every zip, tar, compressed stream and 7z): the dispatcher
// hands it no archive members (scanners.ArchiveReader).
func (s *Scanner) ReadsArchives() bool { return true }

// StringsOnly is the models check's reading of model files for their
// strings alone — pickle string and bytes constants (training_args.bin and
// every zip-stored pickle), safetensors and GGUF metadata, ONNX and Keras
// configs — handed to bs (the secrets check), for a run where the models
// check's own findings are not asked for (--checks secrets): a token
// pickled into training arguments is a secret whatever checks run. It
// reports only what bs finds, lists no rules of its own, and names no
// components; a limit that stopped the reading is still its error (exit
// 2), since strings past it were not read.
func StringsOnly(bs scanners.BytesScanner, opts ...Option) scanners.Scanner {
	return stringsOnly{New(append(opts, WithStrings(bs))...)}
}

type stringsOnly struct{ m *Scanner }

// Check returns "secrets": the findings are the secrets check's.
func (s stringsOnly) Check() string          { return scanners.CheckSecrets }
func (s stringsOnly) Rules() []scanners.Rule { return nil }
func (s stringsOnly) ReadsArchives() bool    { return true }
func (s stringsOnly) Wants(a *scanners.Artifact, head []byte) bool {
	return s.m.Wants(a, head)
}

// Prefix is the models check's: a safetensors file's metadata is in its
// header.
func (s stringsOnly) Prefix(a *scanners.Artifact, head []byte) (int64, bool) {
	return s.m.Prefix(a, head)
}

func (s stringsOnly) Scan(ctx context.Context, a *scanners.Artifact, c scanners.Content) ([]scanners.Finding, error) {
	fs, err := s.m.Scan(ctx, a, c)
	out := fs[:0]
	for _, f := range fs {
		if f.Check != scanners.CheckModels {
			out = append(out, f)
		}
	}
	return out, err
}
