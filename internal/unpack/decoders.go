//go:build !mlwarden_sbatch

// Package unpack opens the compressed formats whose decoders the sbatch
// hook's build (tag mlwarden_sbatch) leaves out: xz, zstd and 7z. Their
// packages' init (zstd's snappy tables, xz's CRC-64 tables, 7z's brotli,
// lz4 and go4.org's readerutil, which links expvar and net/http) was
// ≈ 4 % of every job the hook checks, and a job script — text that sbatch
// requires to start with "#!" — is never one of them. In that build each
// function here fails with ErrNotInBuild (decoders_sbatch.go); the models
// check and the archive reader then report the file as not scanned, as
// for any archive they cannot open.
package unpack

import (
	"errors"
	"io"

	"github.com/bodgit/sevenzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// XZ returns a reader of the xz stream r whose decoder allocates
// dictionaries of dictCap bytes, or what a block header states if more.
func XZ(r io.Reader, dictCap int) (io.Reader, error) {
	return xz.ReaderConfig{DictCap: dictCap}.NewReader(r)
}

// Zstd returns a reader of the zstd stream r: one goroutine, the decoder's
// low-memory default, a window of at most maxWindow bytes and at most
// maxMemory decoded. Close releases it.
func Zstd(r io.Reader, maxWindow, maxMemory uint64) (io.ReadCloser, error) {
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderMaxMemory(maxMemory))
	if err != nil {
		return nil, err
	}
	return d.IOReadCloser(), nil
}

// ZstdLimit reports whether err is a zstd decoder's window or memory
// bound reached.
func ZstdLimit(err error) bool {
	return errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded)
}

// SevenZip is a 7z archive opened by Open7z; File lists its members.
type SevenZip = sevenzip.Reader

// Open7z opens the 7z archive in ra.
func Open7z(ra io.ReaderAt, size int64) (*SevenZip, error) {
	return sevenzip.NewReader(ra, size)
}
