package models

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz/lzma"

	"github.com/mlwarden/mlwarden/internal/unpack"
	"github.com/mlwarden/mlwarden/scanners"
)

// content scans bytes readable at any offset: the artifact itself, a stored
// zip member, or a materialised member. It reports whether the content was
// in a known format.
func (sc *scan) content(p place, ra io.ReaderAt, size int64, name string, depth int) bool {
	if sc.ctx.Err() != nil {
		return true
	}
	hn := int64(8 << 10)
	if hn > size {
		hn = size
	}
	head := make([]byte, hn)
	n, err := ra.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		if len(p) == 0 {
			sc.readErr = fmt.Errorf("read: %w", err)
		} else {
			sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("Could not read%s: %v. %s", p.in(), err, ruleUnscannable.Fix), "read error")
		}
		return true
	}
	head = head[:n]
	f := sniff(head, size, name)
	if f == fmtUnknown {
		return false
	}
	if depth > sc.s.lim.MaxDepth {
		sc.depthLimit(p)
		return true
	}
	switch f {
	case fmtZip:
		sc.zip(p, ra, size, depth)
	case fmt7z:
		sc.sevenZip(p, ra, size, depth)
	case fmtNpy:
		sc.npy(p, ra, size)
	case fmtGGUF:
		sc.gguf(p, ra, size)
	case fmtHDF5:
		sc.hdf5(p, ra, size)
	case fmtSafetensors:
		sc.safetensors(p, ra, size)
	case fmtChatJSON:
		sc.chatJSON(p, ra, size, name)
	case fmtJinja:
		sc.jinjaFile(p, ra, size, name)
	case fmtChatYAML:
		sc.chatYAML(p, ra, size, name)
	case fmtModelfile:
		sc.modelfile(p, ra, size, name)
	case fmtProtobuf:
		sc.protobuf(p, ra, size, name)
		if base := strings.ToLower(path.Base(name)); base == "keras_metadata.pb" || base == "saved_model.pb" {
			sc.hdf5(p, ra, size) // Keras config JSON kept in a SavedModel's object metadata
		}
	default:
		r := &countingReader{r: io.NewSectionReader(ra, 0, size)}
		sc.streamAs(f, p, bufio.NewReaderSize(r, 64<<10), size, name, depth, ra)
	}
	return true
}

// stream scans a member that can only be read in order (a compressed zip
// member, a tar member, a decompressed stream). raFn, when not nil, gives
// random access to the same bytes without buffering (a stored zip member).
// It reports whether the stream was read to its end.
func (sc *scan) stream(p place, r io.Reader, size int64, name string, depth int, stored bool, raFn func() (io.ReaderAt, int64)) bool {
	bufSize := 64 << 10
	if size >= 0 && size < int64(bufSize) {
		bufSize = max(int(size), 16) // small members: a small buffer
	}
	br := bufio.NewReaderSize(r, bufSize)
	head, _ := br.Peek(8 << 10)
	f := sniff(head, size, name)
	if f == fmtUnknown {
		if modelName(name) && len(head) > 0 && !bytes.HasPrefix(head, []byte(lfsPointer)) {
			sc.add(ruleUnscannable, scanners.SeverityMedium,
				fmt.Sprintf("Member%s is named like a model (%s) but its content is in no model format mlwarden knows, so it was not analysed; a loader may still read it. %s", p.in(), path.Ext(name), ruleUnscannable.Fix),
				"unknown content"+p.in())
		}
		return false
	}
	if depth > sc.s.lim.MaxDepth {
		sc.depthLimit(p)
		return false
	}
	switch f {
	case fmtPickle, fmtTorchLegacy, fmtTar, fmtGzip, fmtBzip2, fmtLzma, fmtZlib, fmtLz4, fmtJoblibZF:
		var ra io.ReaderAt
		if stored && raFn != nil {
			ra, _ = raFn()
		}
		sc.streamAs(f, p, br, size, name, depth, ra)
		io.Copy(io.Discard, br) // to the end, so the CRC can be checked
		return true
	}
	if stored && raFn != nil {
		ra, n := raFn()
		sc.content(p, ra, n, name, depth)
		return false
	}
	ra, n, cleanup, err := sc.materialize(p, br)
	if err != nil {
		return false
	}
	defer cleanup()
	sc.content(p, ra, n, name, depth)
	return false
}

// streamAs scans a stream of a known format. ra, when not nil, gives random
// access to the same bytes (for the byte scan of a malformed pickle).
func (sc *scan) streamAs(f format, p place, br *bufio.Reader, size int64, name string, depth int, ra io.ReaderAt) {
	switch f {
	case fmtPickle:
		sc.pickle(p, br, pickleRaw, ra)
	case fmtTorchLegacy:
		if ra != nil {
			sc.legacyHeader(p, ra)
		}
		res := sc.pickle(p, br, pickleTorchLegacy, ra)
		sc.legacyStorages(p, res, size)
	case fmtTar:
		sc.tar(p, br, depth)
	default:
		if f == fmtXz {
			if err := checkXz(ra, size, sc.s.lim.MaxDict); err != nil {
				sc.dictError(p, f, err)
				return
			}
		}
		dr, err := decompressor(f, br, sc.s.lim.MaxDict)
		if err != nil {
			sc.dictError(p, f, err)
			return
		}
		lr := &budgetReader{r: dr, sc: sc, p: p}
		inner := strings.TrimSuffix(name, extOf(f))
		sc.stream(p.child("("+f.String()+")"), lr, -1, inner, depth+1, false, nil)
		if lr.err != nil && !errors.Is(lr.err, io.EOF) && !errors.Is(lr.err, errBudget) {
			sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("Compressed %s stream%s is corrupt: %v; content after the error was not scanned. %s", f, p.in(), lr.err, ruleUnscannable.Fix), f.String()+": "+lr.err.Error())
		}
	}
}

func extOf(f format) string {
	switch f {
	case fmtGzip:
		return ".gz"
	case fmtBzip2:
		return ".bz2"
	case fmtXz:
		return ".xz"
	case fmtLzma:
		return ".lzma"
	case fmtZlib:
		return ".z"
	case fmtLz4:
		return ".lz4"
	}
	return ""
}

// errDict is wrapped by the error for a stream whose dictionary is over
// Limits.MaxDict: it is a limit, not corruption.
var errDict = errors.New("dictionary over the limit")

// dictError reports a stream that cannot be opened: over the dictionary
// limit (a limit: exit 2), or corrupt.
func (sc *scan) dictError(p place, f format, err error) {
	if errors.Is(err, errDict) {
		sc.limit("dictionary limit", p, fmt.Sprintf("Compressed %s stream%s was not decompressed: %v (a decoder would allocate that much memory before reading any data).", f, p.in(), err))
		return
	}
	sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("Compressed %s stream%s cannot be opened: %v. %s", f, p.in(), err, ruleUnscannable.Fix), f.String()+": "+err.Error())
}

// decompressor opens a compressed stream. LZMA dictionaries are checked
// against maxDict before a decoder allocates them (the header states the
// size, up to 4 GiB, and the decoder allocates it at once).
func decompressor(f format, r *bufio.Reader, maxDict int64) (io.Reader, error) {
	switch f {
	case fmtGzip:
		return gzip.NewReader(r)
	case fmtBzip2:
		return bzip2.NewReader(r), nil
	case fmtXz:
		// The reader allocates its capacity or what a block header
		// states, the larger: checkXz has held the headers to maxDict, so
		// the least capacity, not maxDict (which every small file got).
		return unpack.XZ(r, lzma.MinDictCap)
	case fmtLzma:
		h, err := r.Peek(13)
		if err != nil {
			return nil, fmt.Errorf("lzma header: %w", err)
		}
		stated := int64(binary.LittleEndian.Uint32(h[1:5]))
		dict := stated
		if size := binary.LittleEndian.Uint64(h[5:13]); size != ^uint64(0) && int64(size) >= 0 && int64(size) < dict {
			dict = int64(size) // the decoder allocates no more than the data's size
		}
		if dict > maxDict {
			return nil, fmt.Errorf("%w: the lzma header asks for a %d MiB dictionary, the limit is %d MiB", errDict, dict>>20, maxDict>>20)
		}
		return lzma.ReaderConfig{DictCap: int(max(stated, lzma.MinDictCap))}.NewReader(r)
	case fmtZlib:
		return zlib.NewReader(r)
	case fmtLz4:
		return lz4.NewReader(r), nil
	case fmtJoblibZF:
		// joblib < 0.10: "ZF", the length in hex ("0x31f", "0x31fL" from
		// Python 2) padded with spaces to about 19 bytes (joblib 0.8 pads
		// one more), then zlib data.
		br := bufio.NewReader(r)
		hdr := make([]byte, 4)
		if _, err := io.ReadFull(br, hdr); err != nil {
			return nil, err
		}
		for i := 0; ; i++ {
			b, err := br.ReadByte()
			if err != nil {
				return nil, err
			}
			if i > 32 {
				return nil, errors.New("joblib zfile header longer than 32 bytes")
			}
			if !strings.ContainsRune("0123456789abcdefABCDEFL ", rune(b)) {
				br.UnreadByte()
				break
			}
		}
		return zlib.NewReader(br)
	}
	return nil, fmt.Errorf("no decompressor for %s", f)
}

var errBudget = errors.New("decompression limit reached")

// budgetReader stops when the artifact's decompression budget is spent.
type budgetReader struct {
	r   io.Reader
	sc  *scan
	p   place
	err error
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.sc.budget <= 0 {
		if b.err == nil {
			b.err = errBudget
			b.sc.limit("decompression limit", b.p, fmt.Sprintf("More than %d bytes decompressed from one file (a decompression bomb or a very large archive): the rest was not scanned.", b.sc.s.lim.MaxExpand))
		}
		return 0, errBudget
	}
	if int64(len(p)) > b.sc.budget {
		p = p[:b.sc.budget]
	}
	n, err := b.r.Read(p)
	b.sc.budget -= int64(n)
	if err != nil && b.err == nil {
		b.err = err
	}
	return n, err
}

// materialize makes a stream readable at any offset: in memory when small,
// in an anonymous temporary file (named by us, unlinked at once) when large.
func (sc *scan) materialize(p place, r io.Reader) (io.ReaderAt, int64, func(), error) {
	nop := func() {}
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, r, sc.s.lim.MaxInMemory+1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, nop, err
	}
	if n <= sc.s.lim.MaxInMemory {
		return bytes.NewReader(buf.Bytes()), n, nop, nil
	}
	f, err := os.CreateTemp("", "mlwarden-models-*")
	if err != nil {
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("A large member%s could not be spooled for scanning: %v. %s", p.in(), err, ruleUnscannable.Fix), "spool")
		return nil, 0, nop, err
	}
	os.Remove(f.Name())
	total, err := io.Copy(f, io.MultiReader(&buf, r))
	if err != nil {
		f.Close()
		return nil, 0, nop, err
	}
	return f, total, func() { f.Close() }, nil
}

// tar scans a tar stream's regular members.
func (sc *scan) tar(p place, r io.Reader, depth int) {
	tr := tar.NewReader(r)
	for {
		if sc.ctx.Err() != nil {
			return
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if !errors.Is(err, errBudget) {
				sc.add(ruleArchive, ruleArchive.Severity, fmt.Sprintf("Tar archive%s is corrupt (%v): members after the error were not scanned. %s", p.in(), err, ruleArchive.Fix), "tar: "+err.Error())
			}
			return
		}
		if !sc.member(p) {
			return
		}
		sc.memberName(p, h.Name)
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
			sc.memberLink(p, h.Name, h.Linkname)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		sc.stream(p.child(h.Name), tr, h.Size, h.Name, depth+1, false, nil)
	}
}

// sevenZip scans a 7z archive's members (PyTorch checkpoints were shipped
// as 7z in the nullifAI campaign: torch.load cannot open them, but the
// pickle inside runs once someone extracts it). Members are sniffed by
// content, whatever their name.
func (sc *scan) sevenZip(p place, ra io.ReaderAt, size int64, depth int) {
	hold, err := check7z(ra, size, sc.s.lim)
	if err != nil {
		if errors.Is(err, errSevenZipLimit) {
			sc.limit("7z header limit", p, fmt.Sprintf("7z archive%s was not opened: %v; its members were not scanned.", p.in(), err))
		} else {
			sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("7z archive%s cannot be opened (%v): its members were not scanned. %s", p.in(), err, ruleUnscannable.Fix), "7z: "+err.Error())
		}
		return
	}
	zr, err := Open7z(ra, size)
	if err != nil {
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("7z archive%s cannot be opened (%v): its members were not scanned. %s", p.in(), err, ruleUnscannable.Fix), "7z: "+err.Error())
		return
	}
	for _, f := range zr.File {
		if sc.ctx.Err() != nil {
			return
		}
		if f.FileInfo().IsDir() {
			continue
		}
		if !sc.member(p) {
			return
		}
		sc.memberName(p, f.Name)
		if bad, ok := hold[f.Stream]; ok && !f.FileInfo().IsDir() {
			sc.limit("dictionary limit", p.child(f.Name), fmt.Sprintf("7z member %q%s was not decompressed: %v.", f.Name, p.in(), bad))
			continue
		}
		rc, err := f.Open()
		if err != nil {
			sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("7z member %q%s cannot be read (%v). %s", f.Name, p.in(), err, ruleUnscannable.Fix), "7z member "+f.Name)
			continue
		}
		lr := &budgetReader{r: rc, sc: sc, p: p}
		sc.stream(p.child(f.Name), lr, int64(f.UncompressedSize), f.Name, depth+1, false, nil)
		rc.Close()
		if lr.err != nil && !errors.Is(lr.err, io.EOF) && !errors.Is(lr.err, errBudget) {
			sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("7z member %q%s could not be read to its end (%v). %s", f.Name, p.in(), lr.err, ruleUnscannable.Fix), "7z member "+f.Name)
		}
	}
}

// depthLimit reports archives nested past Limits.MaxDepth.
func (sc *scan) depthLimit(p place) {
	sc.limit("depth limit", p, fmt.Sprintf("Archives nested deeper than %d%s were not scanned.", sc.s.lim.MaxDepth, p.in()))
}

// member counts one more archive member; it reports false (and the limit)
// past Limits.MaxMembers.
func (sc *scan) member(p place) bool {
	sc.members++
	if sc.members > sc.s.lim.MaxMembers {
		sc.limit("member limit", p, fmt.Sprintf("More than %d archive members%s: the rest were not scanned.", sc.s.lim.MaxMembers, p.in()))
		return false
	}
	return true
}

// memberName reports an archive member whose name would be written outside
// the directory it is extracted to (zip slip). The name is data: mlwarden
// never opens or writes a path taken from an archive.
func (sc *scan) memberName(p place, name string) {
	if bad, why := escapes(name); bad {
		sc.add(ruleArchive, ruleArchive.Severity,
			fmt.Sprintf("Archive member %q%s %s: extracting the archive writes outside the directory it is extracted to (zip slip), which overwrites files elsewhere. mlwarden reads it as data and never opens it on the host. %s", name, p.in(), why, ruleArchive.Fix),
			"member name "+name)
	}
}

// memberLink reports a link member whose target leaves the archive.
func (sc *scan) memberLink(p place, name, target string) {
	if bad, why := escapes(target); bad {
		sc.add(ruleArchive, ruleArchive.Severity,
			fmt.Sprintf("Archive member %q%s is a link to %q, which %s: extracting the archive and reading the member reads that file instead (a link to /etc/shadow, ~/.ssh). mlwarden never follows links from an archive. %s", name, p.in(), target, why, ruleArchive.Fix),
			"link "+name+" -> "+target)
	}
}
