package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz/lzma"

	"github.com/mlwarden/mlwarden/internal/unpack"
	"github.com/mlwarden/mlwarden/scanners/models"
)

type kind int

const (
	kindNone kind = iota
	kindZip
	kindTar
	kind7z
	kindGzip
	kindBzip2
	kindXz
	kindZstd
	kindLz4
	kindRar
)

func (k kind) String() string {
	return [...]string{"", "zip", "tar", "7z", "gzip", "bzip2", "xz", "zstd", "lz4", "RAR"}[k]
}

// sniff decides from the first bytes whether content is an archive or
// compressed data, by magic number only (never by name).
func sniff(h []byte) kind {
	switch {
	case bytes.HasPrefix(h, []byte("PK\x03\x04")), bytes.HasPrefix(h, []byte("PK\x05\x06")):
		return kindZip
	case bytes.HasPrefix(h, []byte("7z\xbc\xaf\x27\x1c")):
		return kind7z
	case bytes.HasPrefix(h, []byte{0x1f, 0x8b, 0x08}):
		return kindGzip
	case bytes.HasPrefix(h, []byte("BZh")) && len(h) > 3 && h[3] >= '1' && h[3] <= '9':
		return kindBzip2
	case bytes.HasPrefix(h, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return kindXz
	case bytes.HasPrefix(h, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return kindZstd
	case bytes.HasPrefix(h, []byte{0x04, 0x22, 0x4d, 0x18}):
		return kindLz4
	case bytes.HasPrefix(h, []byte("Rar!\x1a\x07")):
		return kindRar
	case len(h) >= 262 && bytes.Equal(h[257:262], []byte("ustar")):
		return kindTar
	}
	return kindNone
}

// weightExts are model and weight files: the models check reads them (and
// hands their strings to the secrets check); they are neither opened nor
// handed to the text checks.
var weightExts = map[string]bool{
	".safetensors": true, ".pt": true, ".pth": true, ".bin": true, ".ckpt": true,
	".gguf": true, ".ggml": true, ".onnx": true, ".h5": true, ".hdf5": true,
	".keras": true, ".pb": true, ".tflite": true, ".npy": true, ".npz": true,
	".pkl": true, ".pickle": true, ".joblib": true, ".dill": true, ".msgpack": true, ".mar": true,
	".engine": true, ".plan": true, ".nemo": true, ".mlmodel": true, ".params": true,
	".arrow": true, ".parquet": true, ".tfrecord": true,
}

// modelContainer reports whether an archive is a model file the models
// check reads as a whole: by name (.pt, .npz, .keras, .nemo, .mar, .bin …)
// or, for a zip, by its first member (PyTorch writes archive/data.pkl
// first, NumPy .npy members, Keras v3 metadata.json and config.json).
func modelContainer(name string, head []byte, k kind) bool {
	if weightExts[strings.ToLower(path.Ext(name))] {
		return true
	}
	if k != kindZip || len(head) < 30 {
		return false
	}
	n := int(binary.LittleEndian.Uint16(head[26:]))
	if 30+n > len(head) {
		return false
	}
	first := string(head[30 : 30+n])
	switch {
	case strings.HasSuffix(first, "/data.pkl"), first == "data.pkl", strings.HasSuffix(first, ".npy"),
		strings.HasSuffix(first, "/version"), first == "metadata.json" && bytes.Contains(head, []byte("keras")):
		return true
	}
	return false
}

// modelFile reports whether a member is a model or pickle: by name, or by
// content (pickle protocol 2-5, PyTorch legacy, NumPy, GGUF, HDF5,
// safetensors). The models check opens the archive itself and reads it.
func modelFile(name string, head []byte) bool {
	if weightExts[strings.ToLower(path.Ext(name))] {
		return true
	}
	switch {
	case len(head) >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5:
		return true
	case bytes.HasPrefix(head, []byte("\x93NUMPY")), bytes.HasPrefix(head, []byte("GGUF")),
		bytes.HasPrefix(head, []byte("\x89HDF\r\n\x1a\n")):
		return true
	case len(head) >= 10 && head[8] == '{' && head[9] == '"':
		n := binary.LittleEndian.Uint64(head[:8])
		return n >= 2 && n < 100<<20 // a safetensors header
	}
	return false
}

var errDict = errors.New("dictionary over the limit")

// decompressor opens a compressed stream with bounded memory.
func (w *walk) decompressor(k kind, r io.Reader) (io.Reader, error) {
	switch k {
	case kindGzip:
		return gzip.NewReader(r)
	case kindBzip2:
		return bzip2.NewReader(r), nil
	case kindXz:
		// Only after checkXz: the reader allocates the larger of DictCap
		// and what a block header states, which checkXz bounds; a DictCap
		// of MaxDict would allocate that much for every stream.
		return unpack.XZ(r, lzma.MinDictCap)
	case kindZstd:
		d, err := unpack.Zstd(r, uint64(w.x.o.MaxDict), uint64(w.x.o.MaxDict))
		if err != nil {
			return nil, err
		}
		return zstdReader{d}, nil
	case kindLz4:
		return lz4.NewReader(r), nil
	}
	return nil, fmt.Errorf("no decompressor for %s", k)
}

// zstdReader maps the decoder's window error to the dictionary limit.
type zstdReader struct{ d io.ReadCloser }

func (z zstdReader) Read(p []byte) (int, error) {
	n, err := z.d.Read(p)
	if unpack.ZstdLimit(err) {
		err = fmt.Errorf("%w: %v", errDict, err)
	}
	return n, err
}

func (z zstdReader) Close() error { return z.d.Close() }

// checkXz refuses an xz file whose dictionary is over maxDict, with the
// models check's header check.
func checkXz(ra io.ReaderAt, size, maxDict int64) error {
	err := models.CheckXz(ra, size, maxDict)
	if err != nil && models.IsLimit(err) {
		return fmt.Errorf("%w: %v", errDict, err)
	}
	return err
}

// tar hands a tar stream's regular files to the sink.
func (w *walk) tar(p string, r io.Reader, depth int) {
	tr := tar.NewReader(r)
	for !w.stopped && w.ctx.Err() == nil {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			if !errors.Is(err, errStopped) {
				w.notScanned(p, fmt.Sprintf("the tar archive is corrupt (%v); members after the error were not read.", err), "tar corrupt")
			}
			return
		}
		switch h.Typeflag {
		case tar.TypeReg:
			w.file(p, h.Name, tr, h.Size, h.FileInfo().Mode(), depth)
		case tar.TypeSymlink, tar.TypeLink:
			w.checkName(p, h.Name) // links are never followed
		}
	}
}

// zipMethods are the compression methods read besides store and deflate.
var zipMethods = map[uint16]zip.Decompressor{
	12: func(r io.Reader) io.ReadCloser { return io.NopCloser(bzip2.NewReader(r)) },
}

// zip hands a zip archive's files to the sink.
func (w *walk) zip(p string, ra io.ReaderAt, size int64, depth int) {
	// archive/zip reads the whole central directory at once: count its
	// entries first.
	if n, err := zipEntries(ra, size); err == nil && n > uint64(w.x.o.MaxMembers) {
		w.stopped = true
		w.limit(p, fmt.Sprintf("the zip archive has %d members, more than %d; it was not read.", n, w.x.o.MaxMembers), "member limit")
		return
	}
	zr, err := zip.NewReader(ra, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		w.notScanned(p, fmt.Sprintf("the zip archive cannot be opened (%v).", err), "zip corrupt")
		return
	}
	for m, d := range zipMethods {
		zr.RegisterDecompressor(m, d)
	}
	zr.RegisterDecompressor(93, func(r io.Reader) io.ReadCloser {
		d, err := unpack.Zstd(r, uint64(w.x.o.MaxDict), uint64(w.x.o.MaxDict))
		if err != nil {
			return io.NopCloser(errReader{err})
		}
		return zstdReader{d}
	})
	for _, f := range zr.File {
		if w.stopped || w.ctx.Err() != nil {
			return
		}
		if f.FileInfo().IsDir() {
			continue
		}
		child := p + "!" + cleanName(f.Name)
		switch {
		case f.Flags&0x1 != 0:
			w.checkName(p, f.Name)
			w.notScanned(child, "the member is encrypted.", "encrypted member")
			continue
		case f.Mode()&fs.ModeSymlink != 0:
			w.checkName(p, f.Name) // a symlink: never followed
			continue
		}
		rc, err := f.Open()
		if err != nil {
			w.checkName(p, f.Name)
			w.notScanned(child, fmt.Sprintf("the member cannot be read (%v; compression method %d).", err, f.Method), "zip member")
			continue
		}
		r := &budgetReader{r: rc, w: w, p: child}
		w.file(p, f.Name, r, int64(min(f.UncompressedSize64, 1<<62)), f.Mode(), depth)
		rc.Close()
		if r.err != nil && !errors.Is(r.err, io.EOF) && !errors.Is(r.err, errStopped) {
			w.notScanned(child, fmt.Sprintf("the member could not be read to its end (%v).", r.err), "zip member corrupt")
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// zipEntries reads the entry count of a zip's end record (zip64 too).
func zipEntries(ra io.ReaderAt, size int64) (uint64, error) {
	tail := min(size, 65535+22+20)
	buf := make([]byte, tail)
	if _, err := ra.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < 22 {
		return 0, errors.New("no end of central directory record")
	}
	n := uint64(binary.LittleEndian.Uint16(buf[i+10:]))
	if i >= 20 && binary.LittleEndian.Uint32(buf[i-20:]) == 0x07064b50 {
		off := binary.LittleEndian.Uint64(buf[i-20+8:])
		rec := make([]byte, 56)
		if off < uint64(size) {
			if _, err := ra.ReadAt(rec, int64(off)); err == nil && binary.LittleEndian.Uint32(rec) == 0x06064b50 {
				n = binary.LittleEndian.Uint64(rec[32:])
			}
		}
	}
	return n, nil
}

// sevenZip hands a 7z archive's files to the sink, after the models check's
// header check.
func (w *walk) sevenZip(p string, ra io.ReaderAt, size int64, depth int) {
	hold, err := models.Check7z(ra, size, models.Limits{MaxDict: w.x.o.MaxDict, MaxMembers: w.x.o.MaxMembers})
	if err != nil {
		if models.IsLimit(err) {
			w.limit(p, fmt.Sprintf("the 7z archive was not opened: %v.", err), "7z header limit")
		} else {
			w.notScanned(p, fmt.Sprintf("the 7z archive cannot be opened (%v).", err), "7z corrupt")
		}
		return
	}
	zr, err := models.Open7z(ra, size)
	if err != nil {
		w.notScanned(p, fmt.Sprintf("the 7z archive cannot be opened (%v; an encrypted header needs its password).", err), "7z unreadable")
		return
	}
	for _, f := range zr.File {
		if w.stopped || w.ctx.Err() != nil {
			return
		}
		if f.FileInfo().IsDir() {
			continue
		}
		child := p + "!" + cleanName(f.Name)
		if bad, ok := hold[f.Stream]; ok {
			w.checkName(p, f.Name)
			w.limit(child, fmt.Sprintf("the member was not decompressed: %v.", bad), "dictionary limit")
			continue
		}
		rc, err := f.Open()
		if err != nil {
			w.checkName(p, f.Name)
			w.notScanned(child, fmt.Sprintf("the member cannot be read (%v; encrypted members need their password).", err), "7z member")
			continue
		}
		r := &budgetReader{r: rc, w: w, p: child}
		w.file(p, f.Name, r, int64(min(f.UncompressedSize, 1<<62)), f.Mode(), depth)
		rc.Close()
		if r.err != nil && !errors.Is(r.err, io.EOF) && !errors.Is(r.err, errStopped) {
			w.notScanned(child, fmt.Sprintf("the member could not be read to its end (%v; encrypted members need their password).", r.err), "7z member unreadable")
		}
	}
}
