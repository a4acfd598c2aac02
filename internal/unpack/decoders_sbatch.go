//go:build mlwarden_sbatch

package unpack

import (
	"io"
	"io/fs"
)

// The sbatch hook's build: no xz, zstd or 7z decoder (decoders.go).

// XZ fails: this build reads no xz stream.
func XZ(io.Reader, int) (io.Reader, error) { return nil, ErrNotInBuild }

// Zstd fails: this build reads no zstd stream.
func Zstd(io.Reader, uint64, uint64) (io.ReadCloser, error) { return nil, ErrNotInBuild }

// ZstdLimit reports false: no zstd decoder runs.
func ZstdLimit(error) bool { return false }

// SevenZip stands for a 7z archive, which this build never opens.
type SevenZip struct{ File []*SevenZipFile }

// SevenZipFile stands for a 7z archive's member.
type SevenZipFile struct {
	Name             string
	Stream           int
	UncompressedSize uint64
}

// FileInfo is not reached: there is no member.
func (*SevenZipFile) FileInfo() fs.FileInfo { return nil }

// Mode is not reached: there is no member.
func (*SevenZipFile) Mode() fs.FileMode { return 0 }

// Open is not reached: there is no member.
func (*SevenZipFile) Open() (io.ReadCloser, error) { return nil, ErrNotInBuild }

// Open7z fails: this build opens no 7z archive.
func Open7z(io.ReaderAt, int64) (*SevenZip, error) { return nil, ErrNotInBuild }
