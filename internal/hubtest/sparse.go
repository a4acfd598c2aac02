package hubtest

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Large model files for tests and benchmarks, written sparse: the bytes a
// scanner reads are real, the tensor data is a hole.

// sparseWriter writes zeros as holes.
type sparseWriter struct {
	f   *os.File
	off int64
}

func (w *sparseWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		chunk := p[:min(len(p), 64<<10)]
		p = p[len(chunk):]
		if allZero(chunk) {
			if _, err := w.f.Seek(int64(len(chunk)), io.SeekCurrent); err != nil {
				return 0, err
			}
		} else if _, err := w.f.Write(chunk); err != nil {
			return 0, err
		}
		w.off += int64(len(chunk))
	}
	return n, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// zeros reads as n zero bytes.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

// crcOfZeros is the CRC-32 of n zero bytes.
func crcOfZeros(n int64) uint32 {
	buf := make([]byte, 1<<20)
	var c uint32
	for n > 0 {
		k := min(n, int64(len(buf)))
		c = crc32.Update(c, crc32.IEEETable, buf[:k])
		n -= k
	}
	return c
}

// InflateCheckpoint writes dst: the PyTorch zip checkpoint src with its
// storages (members …/data/N) grown to about total bytes in all, stored,
// as zeros written sparse. Its pickle, names and order are torch's own.
// It returns the byte ranges of the storages' data, which a scanner never
// needs.
func InflateCheckpoint(src, dst string, total int64) ([][2]int64, error) {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var storages int64
	for _, f := range zr.File {
		if isStorage(f.Name) {
			storages++
		}
	}
	if storages == 0 {
		return nil, fmt.Errorf("%s: no storages", src)
	}
	each := total / storages
	each -= each % 64
	crc := crcOfZeros(each)
	out, err := os.Create(dst)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	sw := &sparseWriter{f: out}
	zw := zip.NewWriter(sw)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if isStorage(f.Name) {
			w, err := zw.CreateRaw(&zip.FileHeader{Name: f.Name, Method: zip.Store, CRC32: crc, CompressedSize64: uint64(each), UncompressedSize64: uint64(each)})
			if err != nil {
				return nil, err
			}
			if _, err := io.CopyBuffer(w, &zeros{each}, make([]byte, 1<<20)); err != nil {
				return nil, err
			}
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
		if err == nil {
			_, err = io.Copy(w, rc)
		}
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := out.Truncate(sw.off); err != nil {
		return nil, err
	}
	// Where the storages' data is, read back.
	zc, err := zip.OpenReader(dst)
	if err != nil {
		return nil, err
	}
	defer zc.Close()
	var data [][2]int64
	for _, f := range zc.File {
		if !isStorage(f.Name) {
			continue
		}
		off, err := f.DataOffset()
		if err != nil {
			return nil, err
		}
		data = append(data, [2]int64{off, off + int64(f.CompressedSize64)})
	}
	if !slices.Equal(names, fileNames(zc.File)) {
		return nil, fmt.Errorf("%s: members out of order", dst)
	}
	return data, nil
}

func fileNames(fs []*zip.File) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

func isStorage(name string) bool {
	dir, _ := path.Split(name)
	return strings.HasSuffix(dir, "/data/") && strings.Count(name, "/") == 2
}

// SparseSafetensors writes a safetensors file of exactly size bytes: a
// header of n F16 tensors dividing the data, which is a hole.
func SparseSafetensors(dst string, size int64, n int) error {
	var b strings.Builder
	b.WriteString(`{"__metadata__":{"format":"pt"}`)
	// The header's length depends on the offsets; fix it in two passes.
	hdrLen := int64(0)
	for pass := 0; pass < 2; pass++ {
		b.Reset()
		b.WriteString(`{"__metadata__":{"format":"pt"}`)
		data := size - 8 - hdrLen
		each := data / int64(n)
		each -= each % 2
		for i := range n {
			end := int64(i+1) * each
			if i == n-1 {
				end = data
			}
			fmt.Fprintf(&b, `,"model.layers.%d.weight":{"dtype":"F16","shape":[%d],"data_offsets":[%d,%d]}`, i, (end-int64(i)*each)/2, int64(i)*each, end)
		}
		b.WriteString("}")
		for b.Len()%8 != 0 || int64(b.Len()) < hdrLen {
			b.WriteByte(' ')
		}
		hdrLen = int64(b.Len())
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	var le [8]byte
	for i := range 8 {
		le[i] = byte(uint64(hdrLen) >> (8 * i))
	}
	if _, err := f.Write(append(le[:], b.String()...)); err != nil {
		return err
	}
	return f.Truncate(size)
}

// FromDirUnhashed lists dir as FromDir does but gives the files Git LFS
// would hold an LFS id derived from their path and size instead of their
// sha256, so that multi-GiB sparse files are not read to be listed. Only
// for tests and benchmarks that never read such a file whole (the hf
// source checks the digest of a file it fetched whole).
func FromDirUnhashed(dir string) ([]File, error) {
	var out []File
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		lfs := slices.Contains(lfsExts, strings.ToLower(filepath.Ext(p))) || fi.Size() >= 10<<20
		if !lfs {
			f, err := fileOf(filepath.ToSlash(rel), p, fi.Size(), false)
			if err != nil {
				return err
			}
			out = append(out, f)
			return nil
		}
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", rel, fi.Size())))
		out = append(out, File{Path: filepath.ToSlash(rel), Size: fi.Size(), OID: hex.EncodeToString(sum[:20]), LFS: hex.EncodeToString(sum[:]),
			Open: func() (io.ReaderAt, error) { return os.Open(p) }})
		return nil
	})
	return out, err
}
