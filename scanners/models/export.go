package models

import (
	"errors"
	"io"
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
