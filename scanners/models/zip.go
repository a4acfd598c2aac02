package models

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/internal/unpack"
	"github.com/mlwarden/mlwarden/scanners"
)

// Why our own zip reader and not archive/zip: a checkpoint must be read the
// way PyTorch's reader (miniz) reads it, not the way Python's zipfile does,
// because the differences are how pickles are hidden (duplicate names, local
// header names that differ from the central directory, odd flag bits, bad
// CRCs: picklescan GHSA-w8jq-xcqf-f792, GHSA-7q5r-7gvp-wc82, CVE-2025-10156).
// We read the central directory, visit every entry by its offset (both
// copies of a duplicate name), compare each local header with its central
// entry and report every difference, and never stop at one bad entry.
// archive/zip hides the local header offset and refuses some archives that
// miniz opens. Only the directory and the members we analyse are read, so a
// 2 GB checkpoint costs its pickle, not its tensors.

type zipEntry struct {
	name        string
	flags       uint16
	method      uint16
	crc         uint32
	csize       uint64
	usize       uint64
	localOffset uint64
	dataOffset  int64 // filled from the local header
	localName   string
	mode        uint32 // Unix mode from the external attributes
}

// errZipLimit is wrapped when a zip has more entries than the member limit.
var errZipLimit = errors.New("over the member limit")

const (
	sigEOCD      = 0x06054b50
	sigEOCD64    = 0x06064b50
	sigLocator64 = 0x07064b50
	sigCentral   = 0x02014b50
	sigLocal     = 0x04034b50
)

// readZipDir reads the central directory.
func readZipDir(ra io.ReaderAt, size int64, maxEntries int) ([]zipEntry, error) {
	// The end record is the last signature in the file's last 64 KiB (its
	// comment may be that long). The last KiB is read first, as Go's
	// archive/zip does: it holds the record of nearly every zip, and the
	// last signature in a suffix is the last one in the whole tail, so the
	// answer is the same. Every read here is announced to a reader over the
	// network (exactRead), which then fetches those bytes and not the
	// blocks around them: a checkpoint's last tensor ends where its
	// directory starts.
	readTail := func(n int64) ([]byte, error) {
		n = min(n, size)
		buf := make([]byte, n)
		exactRead(ra, size-n, n)
		if _, err := ra.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read zip end: %w", err)
		}
		return buf, nil
	}
	buf, err := readTail(1024 + 22 + 20)
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if (i < 20 || len(buf)-i < 22) && int64(len(buf)) < size {
		// Not in the last KiB, or too near its start to see the zip64
		// locator before it: the whole tail.
		if buf, err = readTail(65535 + 22 + 20); err != nil {
			return nil, err
		}
		i = bytes.LastIndex(buf, []byte("PK\x05\x06"))
	}
	if i < 0 || len(buf)-i < 22 {
		return nil, errors.New("no end of central directory record")
	}
	eocd := buf[i:]
	entries := uint64(binary.LittleEndian.Uint16(eocd[10:]))
	cdSize := uint64(binary.LittleEndian.Uint32(eocd[12:]))
	cdOff := uint64(binary.LittleEndian.Uint32(eocd[16:]))
	if i >= 20 && binary.LittleEndian.Uint32(buf[i-20:]) == sigLocator64 {
		off := binary.LittleEndian.Uint64(buf[i-20+8:])
		rec := make([]byte, 56)
		if off < uint64(size) {
			exactRead(ra, int64(off), min(56, size-int64(off)))
			if _, err := ra.ReadAt(rec, int64(off)); err == nil && binary.LittleEndian.Uint32(rec) == sigEOCD64 {
				entries = binary.LittleEndian.Uint64(rec[32:])
				cdSize = binary.LittleEndian.Uint64(rec[40:])
				cdOff = binary.LittleEndian.Uint64(rec[48:])
			}
		}
	}
	if cdOff > uint64(size) || cdSize > uint64(size)-cdOff {
		return nil, fmt.Errorf("central directory (offset %d, size %d) outside the file", cdOff, cdSize)
	}
	// Read entry by entry (never the whole directory), keeping at most
	// maxEntries.
	if cdSize <= maxExactDir {
		exactRead(ra, int64(cdOff), int64(cdSize))
	}
	cdr := bufio.NewReaderSize(io.NewSectionReader(ra, int64(cdOff), int64(cdSize)), 64<<10)
	var out []zipEntry
	for {
		cd, err := cdr.Peek(46)
		if len(cd) < 46 || binary.LittleEndian.Uint32(cd) != sigCentral {
			if err != nil && !errors.Is(err, io.EOF) {
				return out, fmt.Errorf("read central directory: %w", err)
			}
			break
		}
		nl, xl, cl := int(binary.LittleEndian.Uint16(cd[28:])), int(binary.LittleEndian.Uint16(cd[30:])), int(binary.LittleEndian.Uint16(cd[32:]))
		if len(out) >= maxEntries {
			return out, fmt.Errorf("%w: more than %d entries", errZipLimit, maxEntries)
		}
		cd, _ = cdr.Peek(46 + nl + xl + cl)
		if len(cd) < 46+nl+xl+cl {
			return out, errors.New("central directory entry runs past the directory")
		}
		e := zipEntry{
			flags:       binary.LittleEndian.Uint16(cd[8:]),
			method:      binary.LittleEndian.Uint16(cd[10:]),
			crc:         binary.LittleEndian.Uint32(cd[16:]),
			csize:       uint64(binary.LittleEndian.Uint32(cd[20:])),
			usize:       uint64(binary.LittleEndian.Uint32(cd[24:])),
			localOffset: uint64(binary.LittleEndian.Uint32(cd[42:])),
		}
		e.name = string(cd[46 : 46+nl])
		e.mode = binary.LittleEndian.Uint32(cd[38:]) >> 16
		zip64Extra(cd[46+nl:46+nl+xl], &e)
		out = append(out, e)
		cdr.Discard(46 + nl + xl + cl)
	}
	if uint64(len(out)) != entries && entries != 0xffff {
		return out, fmt.Errorf("end record says %d entries, the directory holds %d", entries, len(out))
	}
	return out, nil
}

// maxExactDir is the largest central directory announced as one exact
// read (a checkpoint of 10,000 tensors has about 1 MiB of directory);
// larger ones are read in blocks.
const maxExactDir = 4 << 20

// exactRead tells a reader that fetches over the network which bytes the
// next read needs (scanners/source/ranged's PrefetchRange), through the
// section readers around it, so that it fetches exactly those; any other
// reader is left alone.
func exactRead(ra io.ReaderAt, off, n int64) {
	for {
		sr, ok := ra.(*io.SectionReader)
		if !ok {
			break
		}
		outer, base, _ := sr.Outer()
		ra, off = outer, off+base
	}
	if p, ok := ra.(interface{ PrefetchRange(off, n int64) }); ok && n > 0 {
		p.PrefetchRange(off, n)
	}
}

func zip64Extra(x []byte, e *zipEntry) {
	for len(x) >= 4 {
		id, n := binary.LittleEndian.Uint16(x), int(binary.LittleEndian.Uint16(x[2:]))
		if 4+n > len(x) {
			return
		}
		if id == 1 {
			d := x[4 : 4+n]
			next := func() uint64 {
				if len(d) < 8 {
					return 0
				}
				v := binary.LittleEndian.Uint64(d)
				d = d[8:]
				return v
			}
			if e.usize == 0xffffffff {
				e.usize = next()
			}
			if e.csize == 0xffffffff {
				e.csize = next()
			}
			if e.localOffset == 0xffffffff {
				e.localOffset = next()
			}
		}
		x = x[4+n:]
	}
}

// readLocal reads e's local header; it fills dataOffset and localName.
func readLocal(ra io.ReaderAt, size int64, e *zipEntry) error {
	if e.localOffset+30 > uint64(size) {
		return fmt.Errorf("local header offset %d outside the file", e.localOffset)
	}
	h := make([]byte, 30)
	if _, err := ra.ReadAt(h, int64(e.localOffset)); err != nil {
		return fmt.Errorf("read local header: %w", err)
	}
	if binary.LittleEndian.Uint32(h) != sigLocal {
		return fmt.Errorf("no local header at offset %d", e.localOffset)
	}
	nl, xl := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
	name := make([]byte, nl)
	if _, err := ra.ReadAt(name, int64(e.localOffset)+30); err != nil {
		return fmt.Errorf("read local header name: %w", err)
	}
	e.localName = string(name)
	e.dataOffset = int64(e.localOffset) + 30 + nl + xl
	if e.dataOffset > size || e.csize > uint64(size-e.dataOffset) {
		return fmt.Errorf("data (offset %d, %d bytes) runs past the end of the file", e.dataOffset, e.csize)
	}
	return nil
}

// scanLocalHeaders finds entries by walking local headers from the start,
// for archives whose central directory cannot be read.
func scanLocalHeaders(ra io.ReaderAt, size int64, max int) []zipEntry {
	var out []zipEntry
	off := int64(0)
	h := make([]byte, 30)
	for off+30 <= size && len(out) < max {
		if _, err := ra.ReadAt(h, off); err != nil || binary.LittleEndian.Uint32(h) != sigLocal {
			// Look for the next local header in the next 1 MiB.
			next := findSig(ra, size, off+1, 1<<20)
			if next < 0 {
				break
			}
			off = next
			continue
		}
		e := zipEntry{
			flags:       binary.LittleEndian.Uint16(h[6:]),
			method:      binary.LittleEndian.Uint16(h[8:]),
			crc:         binary.LittleEndian.Uint32(h[14:]),
			csize:       uint64(binary.LittleEndian.Uint32(h[18:])),
			usize:       uint64(binary.LittleEndian.Uint32(h[22:])),
			localOffset: uint64(off),
		}
		if err := readLocal(ra, size, &e); err != nil {
			e.csize = 0
			if e.dataOffset == 0 {
				break
			}
		}
		e.name = e.localName
		if e.flags&0x8 != 0 || e.csize == 0 {
			// Size in a data descriptor: find where the next header starts.
			next := findSig(ra, size, e.dataOffset, 1<<30)
			if next < 0 {
				next = size
			}
			e.csize = uint64(next - e.dataOffset)
		}
		out = append(out, e)
		off = e.dataOffset + int64(e.csize)
	}
	return out
}

func findSig(ra io.ReaderAt, size, from, limit int64) int64 {
	buf := make([]byte, 64<<10)
	for pos := from; pos < size && pos-from < limit; pos += int64(len(buf)) - 3 {
		n, _ := ra.ReadAt(buf, pos)
		if n < 4 {
			return -1
		}
		if i := bytes.Index(buf[:n], []byte("PK\x03\x04")); i >= 0 {
			return pos + int64(i)
		}
		if i := bytes.Index(buf[:n], []byte("PK\x01\x02")); i >= 0 {
			return pos + int64(i)
		}
	}
	return -1
}

// open returns a reader of e's uncompressed bytes.
func (e *zipEntry) open(ra io.ReaderAt) (io.ReadCloser, error) {
	return e.openDict(ra, 128<<20)
}

// openDict is open with a bound on zstd's window.
func (e *zipEntry) openDict(ra io.ReaderAt, maxDict int64) (io.ReadCloser, error) {
	raw := io.NewSectionReader(ra, e.dataOffset, int64(e.csize))
	switch e.method {
	case 0:
		return io.NopCloser(raw), nil
	case 8:
		return flate.NewReader(raw), nil
	case 12:
		return io.NopCloser(bzip2.NewReader(raw)), nil
	case 93:
		return unpack.Zstd(raw, uint64(maxDict), uint64(2*maxDict))
	}
	return nil, fmt.Errorf("unsupported compression method %d", e.method)
}

// zipLayout says what kind of zip this is from its names.
type zipLayout struct {
	torchPrefix  string // "archive" for archive/data.pkl
	keras        bool   // config.json + metadata.json or model.weights.h5 at the root
	kerasVersion string // metadata.json's keras_version
}

func layoutOf(es []zipEntry) zipLayout {
	var l zipLayout
	root := map[string]bool{}
	for _, e := range es {
		if dir, base := path.Split(e.name); base == "data.pkl" && strings.Count(dir, "/") == 1 {
			l.torchPrefix = strings.TrimSuffix(dir, "/")
		}
		if !strings.Contains(e.name, "/") {
			root[e.name] = true
		}
	}
	l.keras = root["config.json"] && (root["metadata.json"] || root["model.weights.h5"])
	return l
}

// zip scans a zip archive's members.
func (sc *scan) zip(p place, ra io.ReaderAt, size int64, depth int) {
	es, err := readZipDir(ra, size, sc.s.lim.MaxMembers)
	if errors.Is(err, errZipLimit) {
		sc.limit("member limit", p, fmt.Sprintf("Zip archive%s has more than %d entries: the first %d were scanned, the rest were not.", p.in(), sc.s.lim.MaxMembers, sc.s.lim.MaxMembers))
		err = nil
	}
	if err != nil {
		sc.add(ruleArchive, ruleArchive.Severity,
			fmt.Sprintf("Zip archive%s cannot be read the normal way (%v); its entries were found by walking local headers instead. PyTorch and Python's zipfile may read such a file differently, which hides content from scanners. %s", p.in(), err, ruleArchive.Fix),
			"zip: "+err.Error())
		if len(es) == 0 {
			es = scanLocalHeaders(ra, size, sc.s.lim.MaxMembers)
		}
	}
	lay := layoutOf(es)
	if lay.keras {
		// The version decides how a Lambda or TorchModuleWrapper is judged:
		// read metadata.json before config.json, whatever their order.
		for i := range es {
			md := es[i] // a copy: the walk below checks its local header
			if md.name == "metadata.json" && readLocal(ra, size, &md) == nil {
				if rc, err := md.openDict(ra, sc.s.lim.MaxDict); err == nil {
					data, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
					rc.Close()
					lay.kerasVersion = kerasMetadataVersion(data)
				}
			}
		}
	}
	seen := map[string]int{}
	for i := range es {
		e := &es[i]
		seen[e.name]++
		if seen[e.name] == 2 {
			sc.add(ruleArchive, ruleArchive.Severity,
				fmt.Sprintf("Zip archive%s has more than one entry named %q: PyTorch loads the first, Python's zipfile the last, so a scanner using one misses the other (duplicate-entry bypass). Every copy is scanned. %s", p.in(), e.name, ruleArchive.Fix),
				"duplicate entry "+e.name)
		}
	}
	for i := range es {
		if sc.ctx.Err() != nil {
			return
		}
		e := &es[i]
		if !sc.member(p) {
			return
		}
		sc.memberName(p, e.name)
		if strings.HasSuffix(e.name, "/") && e.usize == 0 {
			continue
		}
		if e.dataOffset == 0 {
			if err := readLocal(ra, size, e); err != nil {
				sc.add(ruleArchive, ruleArchive.Severity, fmt.Sprintf("Zip entry %q%s cannot be read: %v. %s", e.name, p.in(), err, ruleArchive.Fix), "entry "+e.name)
				continue
			}
			if e.localName != e.name {
				sc.add(ruleArchive, ruleArchive.Severity,
					fmt.Sprintf("Zip entry %q%s has the name %q in its local header: readers that trust one or the other see different files (CVE-2025-1944). %s", e.name, p.in(), e.localName, ruleArchive.Fix),
					"local name "+e.localName)
			}
		}
		if e.flags&0x20 != 0 {
			sc.add(ruleArchive, ruleArchive.Severity,
				fmt.Sprintf("Zip entry %q%s has general-purpose flag bit 0x0020 (compressed patched data), which makes Python's zipfile refuse it while other readers may load it (CVE-2025-1945). %s", e.name, p.in(), ruleArchive.Fix),
				fmt.Sprintf("flags 0x%04x on %s", e.flags, e.name))
		}
		if e.flags&0x41 != 0 || e.method == 99 {
			if how, enc := encryptedMember(ra, e, sc.s.lim.MaxDict); enc {
				sc.add(ruleUnscannable, scanners.SeverityMedium,
					fmt.Sprintf("Zip entry %q%s is encrypted (%s): encrypted member not scanned. torch.load, np.load and Python's zipfile cannot read it without the password; whoever extracts it with the password gets content mlwarden did not see. Scan it once decrypted, or obtain the model unencrypted.", e.name, p.in(), how),
					"encrypted member "+e.name+" ("+how+")")
				continue
			}
			sc.add(ruleArchive, ruleArchive.Severity,
				fmt.Sprintf("Zip entry %q%s sets the encryption flag bits 0x%04x but its data is not encrypted: Python's zipfile refuses it while other readers load it (CVE-2025-1945). It was scanned. %s", e.name, p.in(), e.flags&0x41, ruleArchive.Fix),
				fmt.Sprintf("flags 0x%04x on %s", e.flags, e.name))
		}
		if lay.torchPrefix != "" && strings.HasPrefix(e.name, lay.torchPrefix+"/data/") {
			continue // tensor storage: raw bytes PyTorch never unpickles
		}
		sc.zipMember(p, ra, e, lay, depth)
	}
}

func (sc *scan) zipMember(p place, ra io.ReaderAt, e *zipEntry, lay zipLayout, depth int) {
	mp := p.child(e.name)
	if e.mode&0o170000 == 0o120000 && e.usize <= 4096 { // a symbolic link: its data is the target
		if rc, err := e.open(ra); err == nil {
			target, _ := io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
			sc.memberLink(p, e.name, string(target))
		}
		return
	}
	rc, err := e.openDict(ra, sc.s.lim.MaxDict)
	if err != nil {
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("Zip entry %q%s was not scanned: %v. %s", e.name, p.in(), err, ruleUnscannable.Fix), "entry "+e.name)
		return
	}
	defer rc.Close()
	if e.method == 0 && e.usize != e.csize {
		sc.add(ruleArchive, ruleArchive.Severity, fmt.Sprintf("Stored zip entry %q%s says %d bytes uncompressed but holds %d. %s", e.name, p.in(), e.usize, e.csize, ruleArchive.Fix), "size mismatch "+e.name)
	}
	if lay.keras && (e.name == "config.json" || e.name == "metadata.json") {
		data, _ := io.ReadAll(io.LimitReader(rc, 64<<20))
		sc.kerasJSON(mp, data, lay.kerasVersion)
		return
	}
	var src io.Reader = rc
	if e.method != 0 {
		src = &budgetReader{r: rc, sc: sc, p: p}
	}
	var crc = crc32.NewIEEE()
	counted := &countingReader{r: io.TeeReader(src, crc)}
	ok := sc.stream(mp, counted, int64(e.usize), e.name, depth+1, e.method == 0, func() (io.ReaderAt, int64) {
		return io.NewSectionReader(ra, e.dataOffset, int64(e.csize)), int64(e.csize)
	})
	if counted.err != nil && !errors.Is(counted.err, errBudget) {
		sc.add(ruleUnscannable, ruleUnscannable.Severity,
			fmt.Sprintf("Zip entry %q%s cannot be decompressed (%v): what follows the error was not scanned, and loaders may read it differently. %s", e.name, p.in(), counted.err, ruleUnscannable.Fix),
			"entry "+e.name+": "+counted.err.Error())
		return
	}
	if ok && counted.n == int64(e.usize) && counted.eof && crc.Sum32() != e.crc {
		sc.add(ruleArchive, ruleArchive.Severity,
			fmt.Sprintf("Zip entry %q%s fails its CRC-32 check: Python's zipfile refuses it while PyTorch loads it, so scanners built on zipfile skip it (CVE-2025-10156). It was scanned. %s", e.name, p.in(), ruleArchive.Fix),
			fmt.Sprintf("crc %08x, header says %08x", crc.Sum32(), e.crc))
	}
}

type countingReader struct {
	r   io.Reader
	n   int64
	eof bool
	err error // the first error other than EOF
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if err == io.EOF {
		c.eof = true
	} else if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// encryptedMember tells a member that is really encrypted from one whose
// encryption flag is a trick (CVE-2025-1945: the flag makes Python's
// zipfile refuse a plain member that PyTorch's reader loads). AES members
// (WinZip AE-1/AE-2) say so by method 99. For the flag bits (0x0001
// traditional ZipCrypto, 0x0040 strong encryption) the data decides: a
// member whose first bytes, read plain (decompressed when deflated), are in
// a format mlwarden knows is not encrypted; encrypted data starts with a
// 12-byte random header (ZipCrypto) or a decryption header, which neither
// decompresses nor looks like a model. how names the scheme.
func encryptedMember(ra io.ReaderAt, e *zipEntry, maxDict int64) (how string, enc bool) {
	switch {
	case e.method == 99:
		return "WinZip AES", true
	case e.flags&0x40 != 0:
		how = "PKWARE strong encryption"
	default:
		how = "ZipCrypto"
	}
	rc, err := e.openDict(ra, maxDict)
	if err != nil {
		return how, true
	}
	defer rc.Close()
	head := make([]byte, 8<<10)
	n, _ := io.ReadFull(rc, head)
	if n == 0 {
		return how, e.csize > 0
	}
	return how, sniff(head[:n], int64(e.usize), e.name) == fmtUnknown
}
