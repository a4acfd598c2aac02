package models

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// Why a header check before github.com/bodgit/sevenzip: its reader
// allocates every count a 7z header states (files, folders, coders, bind
// pairs, sizes, property bytes) before reading what they describe, so a
// header of a few bytes declaring 2^28 files or a 30 GB property makes the
// process die of an out-of-memory error, which no recover catches. check7z
// parses the header as that reader does, with every count checked against
// the bytes that hold it and against Limits, decoding an encoded (LZMA)
// header itself with a bounded dictionary, and only then is the archive
// opened. It also finds the folders whose decoders would allocate too much
// (an LZMA or LZMA2 dictionary over Limits.MaxDict, zstd's unbounded
// window): their members are reported instead of opened.

// errSevenZipLimit is wrapped by check7z's error when a limit, not
// corruption, stops it.
var errSevenZipLimit = errors.New("over a limit")

const (
	szEnd = iota
	szHeader
	szArchiveProperties
	szAdditionalStreamsInfo
	szMainStreamsInfo
	szFilesInfo
	szPackInfo
	szUnpackInfo
	szSubStreamsInfo
	szSize
	szCRC
	szFolderID
	szCodersUnpackSize
	szNumUnpackStream
)

var errSzTruncated = errors.New("7z header is truncated or states more than it holds")

type szReader struct {
	b   []byte
	pos int
}

func (r *szReader) left() uint64 { return uint64(len(r.b) - r.pos) }

func (r *szReader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errSzTruncated
	}
	r.pos++
	return r.b[r.pos-1], nil
}

func (r *szReader) bytes(n uint64) ([]byte, error) {
	if n > r.left() {
		return nil, errSzTruncated
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// num reads a 7z NUMBER (the first byte's high bits say how many bytes follow).
func (r *szReader) num() (uint64, error) {
	first, err := r.byte()
	if err != nil {
		return 0, err
	}
	var v uint64
	mask := byte(0x80)
	for i := 0; i < 8; i++ {
		if first&mask == 0 {
			return v | uint64(first&(mask-1))<<(8*i), nil
		}
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b) << (8 * i)
		mask >>= 1
	}
	return v, nil
}

// count reads a count of items that each take at least per bytes.
func (r *szReader) count(per uint64) (uint64, error) {
	n, err := r.num()
	if err != nil {
		return 0, err
	}
	if per > 0 && n > r.left()/per {
		return 0, fmt.Errorf("7z header states %d items in %d bytes", n, r.left())
	}
	return n, nil
}

// crcs skips a digests record of n entries as the reader reads it.
func (r *szReader) crcs(n uint64) error {
	all, err := r.byte()
	if err != nil {
		return err
	}
	defined := n
	if all == 0 {
		if n > r.left()*8 {
			return errSzTruncated
		}
		bits, err := r.bytes((n + 7) / 8)
		if err != nil {
			return err
		}
		defined = 0
		for i := uint64(0); i < n; i++ {
			if bits[i/8]&(0x80>>(i%8)) != 0 {
				defined++
			}
		}
	}
	if defined > r.left()/4 {
		return errSzTruncated
	}
	_, err = r.bytes(4 * defined)
	return err
}

type szCoder struct {
	id      []byte
	in, out uint64
	props   []byte
}

type szFolder struct {
	coders []szCoder
	in     uint64
	out    uint64
	unpack []uint64 // one per output stream
}

type szStreams struct {
	packPos   uint64
	packSizes []uint64
	folders   []szFolder
}

func (r *szReader) streamsInfo(lim Limits) (*szStreams, error) {
	s := &szStreams{}
	id, err := r.byte()
	if err != nil {
		return nil, err
	}
	if id == szPackInfo {
		if s.packPos, err = r.num(); err != nil {
			return nil, err
		}
		n, err := r.count(1)
		if err != nil {
			return nil, err
		}
		if id, err = r.byte(); err != nil {
			return nil, err
		}
		if id == szSize {
			s.packSizes = make([]uint64, n)
			for i := range s.packSizes {
				if s.packSizes[i], err = r.num(); err != nil {
					return nil, err
				}
			}
			if id, err = r.byte(); err != nil {
				return nil, err
			}
		}
		if id == szCRC {
			if err := r.crcs(n); err != nil {
				return nil, err
			}
			if id, err = r.byte(); err != nil {
				return nil, err
			}
		}
		if id != szEnd {
			return nil, errors.New("7z pack info: unexpected property")
		}
		if id, err = r.byte(); err != nil {
			return nil, err
		}
	}
	if id == szUnpackInfo {
		if id, err = r.byte(); err != nil || id != szFolderID {
			return nil, errors.New("7z unpack info without folders")
		}
		n, err := r.count(2)
		if err != nil {
			return nil, err
		}
		if n > uint64(lim.MaxEntries) {
			return nil, fmt.Errorf("%w: %d folders, the limit is %d", errSevenZipLimit, n, lim.MaxEntries)
		}
		if ext, err := r.byte(); err != nil || ext != 0 {
			return nil, errors.New("7z external folders are not supported")
		}
		s.folders = make([]szFolder, n)
		for i := range s.folders {
			if err := r.folder(&s.folders[i]); err != nil {
				return nil, err
			}
		}
		if id, err = r.byte(); err != nil || id != szCodersUnpackSize {
			return nil, errors.New("7z unpack info without sizes")
		}
		for i := range s.folders {
			f := &s.folders[i]
			if f.out > r.left() {
				return nil, errSzTruncated
			}
			f.unpack = make([]uint64, f.out)
			for j := range f.unpack {
				if f.unpack[j], err = r.num(); err != nil {
					return nil, err
				}
			}
		}
		if id, err = r.byte(); err != nil {
			return nil, err
		}
		if id == szCRC {
			if err := r.crcs(n); err != nil {
				return nil, err
			}
			if id, err = r.byte(); err != nil {
				return nil, err
			}
		}
		if id != szEnd {
			return nil, errors.New("7z unpack info: unexpected property")
		}
		if id, err = r.byte(); err != nil {
			return nil, err
		}
	}
	if id == szSubStreamsInfo {
		if s.folders == nil {
			return nil, errors.New("7z substreams without folders")
		}
		if id, err = r.byte(); err != nil {
			return nil, err
		}
		streams := make([]uint64, len(s.folders))
		var total uint64
		for i := range streams {
			streams[i] = 1
		}
		if id == szNumUnpackStream {
			for i := range streams {
				if streams[i], err = r.num(); err != nil {
					return nil, err
				}
			}
			if id, err = r.byte(); err != nil {
				return nil, err
			}
		}
		for _, n := range streams {
			total += n
			if n > uint64(lim.MaxMembers) || total > uint64(lim.MaxMembers) {
				return nil, fmt.Errorf("%w: more than %d streams, the member limit", errSevenZipLimit, lim.MaxMembers)
			}
		}
		if id == szSize {
			for _, n := range streams {
				for j := uint64(1); j < n; j++ {
					if _, err := r.num(); err != nil {
						return nil, err
					}
				}
			}
			if id, err = r.byte(); err != nil {
				return nil, err
			}
		}
		if id == szCRC {
			if err := r.crcs(total); err != nil {
				return nil, err
			}
			if id, err = r.byte(); err != nil {
				return nil, err
			}
		}
		if id != szEnd {
			return nil, errors.New("7z substreams: unexpected property")
		}
		if id, err = r.byte(); err != nil {
			return nil, err
		}
	}
	if id != szEnd {
		return nil, errors.New("7z streams info: unexpected property")
	}
	return s, nil
}

// maxCoderStreams is 7-Zip's own bound on a folder's streams.
const maxCoderStreams = 64

func (r *szReader) folder(f *szFolder) error {
	n, err := r.count(1)
	if err != nil {
		return err
	}
	if n == 0 || n > maxCoderStreams {
		return fmt.Errorf("7z folder with %d coders", n)
	}
	f.coders = make([]szCoder, n)
	for i := range f.coders {
		c := &f.coders[i]
		v, err := r.byte()
		if err != nil {
			return err
		}
		if c.id, err = r.bytes(uint64(v & 0xf)); err != nil {
			return err
		}
		c.in, c.out = 1, 1
		if v&0x10 != 0 {
			if c.in, err = r.num(); err != nil {
				return err
			}
			if c.out, err = r.num(); err != nil {
				return err
			}
		}
		if v&0x20 != 0 {
			size, err := r.num()
			if err != nil {
				return err
			}
			if c.props, err = r.bytes(size); err != nil {
				return err
			}
		}
		if c.in > maxCoderStreams || c.out > maxCoderStreams {
			return fmt.Errorf("7z coder with %d inputs and %d outputs", c.in, c.out)
		}
		f.in += c.in
		f.out += c.out
	}
	if f.out == 0 || f.out > maxCoderStreams || f.in > maxCoderStreams || f.in < f.out-1 {
		return fmt.Errorf("7z folder with %d inputs and %d outputs", f.in, f.out)
	}
	for range f.out - 1 { // bind pairs
		if _, err := r.num(); err != nil {
			return err
		}
		if _, err := r.num(); err != nil {
			return err
		}
	}
	if packed := f.in - (f.out - 1); packed > 1 {
		for range packed {
			if _, err := r.num(); err != nil {
				return err
			}
		}
	}
	return nil
}

var (
	szCopy  = []byte{0x00}
	szLZMA  = []byte{0x03, 0x01, 0x01}
	szLZMA2 = []byte{0x21}
	szZstd  = []byte{0x04, 0xf7, 0x11, 0x01}
)

// dict returns the memory a folder's decoders would allocate for their
// dictionaries, or an error when it cannot be bounded.
func (f *szFolder) dict() (int64, error) {
	var total int64
	out := 0
	for _, c := range f.coders {
		size := uint64(1<<63 - 1)
		if out < len(f.unpack) {
			size = f.unpack[out]
		}
		out += int(c.out)
		switch {
		case bytes.Equal(c.id, szLZMA):
			if len(c.props) < 5 {
				return 0, errors.New("LZMA coder without properties")
			}
			d := uint64(binary.LittleEndian.Uint32(c.props[1:5]))
			total += int64(min(d, size)) // the decoder is given the size and never allocates more
		case bytes.Equal(c.id, szLZMA2):
			if len(c.props) != 1 {
				return 0, errors.New("LZMA2 coder without properties")
			}
			total += lzma2Dict(c.props[0])
		case bytes.Equal(c.id, szZstd):
			return 0, errors.New("zstd in a 7z archive is not decompressed: its window is not bounded")
		}
	}
	return total, nil
}

// check7z checks a 7z archive's header before sevenzip.NewReader reads it.
// It returns the folders whose members must not be opened, with why.
func check7z(ra io.ReaderAt, size int64, lim Limits) (map[int]error, error) {
	var sig [32]byte
	if _, err := ra.ReadAt(sig[:], 0); err != nil {
		return nil, fmt.Errorf("7z signature header: %w", err)
	}
	off := binary.LittleEndian.Uint64(sig[12:20])
	n := binary.LittleEndian.Uint64(sig[20:28])
	if off > uint64(size) || n > uint64(size)-off || 32+off+n > uint64(size) {
		return nil, fmt.Errorf("7z header (offset %d, %d bytes) outside the file", off, n)
	}
	if n > uint64(lim.MaxHeader) {
		return nil, fmt.Errorf("%w: a %d MiB header, the limit is %d MiB", errSevenZipLimit, n>>20, lim.MaxHeader>>20)
	}
	if n == 0 {
		return nil, nil // an empty archive
	}
	h := make([]byte, n)
	if _, err := ra.ReadAt(h, int64(32+off)); err != nil {
		return nil, fmt.Errorf("read 7z header: %w", err)
	}
	r := &szReader{b: h}
	id, _ := r.byte()
	if id != szHeader && id != 0x17 { // kEncodedHeader
		return nil, errors.New("7z header starts with an unknown property")
	}
	if id == 0x17 {
		s, err := r.streamsInfo(lim)
		if err != nil {
			return nil, err
		}
		if h, err = decodeHeader(ra, size, s, lim); err != nil {
			return nil, err
		}
		r = &szReader{b: h}
		if id, _ := r.byte(); id != szHeader {
			return nil, errors.New("7z encoded header does not hold a header")
		}
	}
	return r.header(lim)
}

// header checks a plain header and returns the folders to hold back.
func (r *szReader) header(lim Limits) (map[int]error, error) {
	id, err := r.byte()
	if err != nil {
		return nil, err
	}
	if id == szArchiveProperties || id == szAdditionalStreamsInfo {
		return nil, errors.New("7z archive properties and additional streams are not supported")
	}
	hold := map[int]error{}
	if id == szMainStreamsInfo {
		s, err := r.streamsInfo(lim)
		if err != nil {
			return nil, err
		}
		for i := range s.folders {
			d, err := s.folders[i].dict()
			switch {
			case err != nil:
				hold[i] = err
			case d > lim.MaxDict:
				hold[i] = fmt.Errorf("its decoders would allocate %d MiB of dictionary, the limit is %d MiB", d>>20, lim.MaxDict>>20)
			}
		}
		if id, err = r.byte(); err != nil {
			return nil, err
		}
	}
	if id == szFilesInfo {
		files, err := r.num()
		if err != nil {
			return nil, err
		}
		if files > uint64(lim.MaxMembers) {
			return nil, fmt.Errorf("%w: %d files, more than the member limit of %d", errSevenZipLimit, files, lim.MaxMembers)
		}
		// The file properties are read per file, bounded by the count.
	}
	return hold, nil
}

// decodeHeader decodes an encoded header: one folder of one LZMA or LZMA2
// coder (or a copy), its size and dictionary within Limits.MaxHeader and
// Limits.MaxDict.
func decodeHeader(ra io.ReaderAt, size int64, s *szStreams, lim Limits) ([]byte, error) {
	if len(s.folders) != 1 || len(s.folders[0].coders) != 1 || len(s.packSizes) != 1 || len(s.folders[0].unpack) != 1 {
		return nil, errors.New("7z encoded header is not one coder of one stream")
	}
	f := &s.folders[0]
	c := f.coders[0]
	unpack, packed := f.unpack[0], s.packSizes[0]
	if unpack > uint64(lim.MaxHeader) || packed > uint64(lim.MaxHeader) {
		return nil, fmt.Errorf("%w: a %d MiB encoded header, the limit is %d MiB", errSevenZipLimit, max(unpack, packed)>>20, lim.MaxHeader>>20)
	}
	if s.packPos > uint64(size) || 32+s.packPos+packed > uint64(size) {
		return nil, errors.New("7z encoded header outside the file")
	}
	if d, err := f.dict(); err != nil || d > lim.MaxDict {
		return nil, fmt.Errorf("%w: the encoded header's dictionary is over %d MiB", errSevenZipLimit, lim.MaxDict>>20)
	}
	src := io.NewSectionReader(ra, int64(32+s.packPos), int64(packed))
	var dec io.Reader
	var err error
	switch {
	case bytes.Equal(c.id, szCopy):
		dec = src
	case bytes.Equal(c.id, szLZMA):
		var hdr [13]byte
		copy(hdr[:5], c.props)
		binary.LittleEndian.PutUint64(hdr[5:], unpack)
		dict := max(min(int64(binary.LittleEndian.Uint32(c.props[1:5])), int64(unpack)), lzma.MinDictCap)
		binary.LittleEndian.PutUint32(hdr[1:5], uint32(dict))
		dec, err = lzma.ReaderConfig{DictCap: int(dict)}.NewReader(io.MultiReader(bytes.NewReader(hdr[:]), src))
	case bytes.Equal(c.id, szLZMA2):
		dec, err = lzma.Reader2Config{DictCap: int(max(lzma2Dict(c.props[0]), lzma.MinDictCap))}.NewReader2(src)
	default:
		return nil, fmt.Errorf("7z header compressed with method %x, which is not supported", c.id)
	}
	if err != nil {
		return nil, fmt.Errorf("7z encoded header: %w", err)
	}
	out := make([]byte, unpack)
	if _, err := io.ReadFull(dec, out); err != nil {
		return nil, fmt.Errorf("7z encoded header: %w", err)
	}
	return out, nil
}
