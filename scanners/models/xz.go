package models

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// checkXz reads the index of every stream in an xz file, from the end, and
// the header of every block it lists, and refuses a file whose LZMA2
// dictionary is over maxDict before the decoder allocates it: the xz reader
// allocates whatever dictionary a block header states (up to 4 GiB), and a
// later block may state another. Only the headers are read.
func checkXz(ra io.ReaderAt, size, maxDict int64) error {
	if ra == nil {
		return errors.New("xz: no random access to check its block headers")
	}
	end := size
	for end > 0 {
		// Stream padding: zero bytes in multiples of four.
		var w [4]byte
		if end >= 4 {
			if _, err := ra.ReadAt(w[:], end-4); err == nil && w == [4]byte{} {
				end -= 4
				continue
			}
		}
		start, err := checkXzStream(ra, end, maxDict)
		if err != nil {
			return err
		}
		end = start
	}
	return nil
}

// checkXzStream checks the stream that ends at end and returns where it
// starts.
func checkXzStream(ra io.ReaderAt, end, maxDict int64) (int64, error) {
	if end < 24 {
		return 0, errors.New("xz: truncated stream")
	}
	var foot [12]byte
	if _, err := ra.ReadAt(foot[:], end-12); err != nil {
		return 0, fmt.Errorf("xz footer: %w", err)
	}
	if !bytes.Equal(foot[10:], []byte("YZ")) {
		return 0, errors.New("xz: no stream footer")
	}
	backward := (int64(binary.LittleEndian.Uint32(foot[4:8])) + 1) * 4
	idxStart := end - 12 - backward
	if backward > 1<<30 || idxStart < 12 {
		return 0, errors.New("xz: index outside the file")
	}
	idx := make([]byte, backward)
	if _, err := ra.ReadAt(idx, idxStart); err != nil {
		return 0, fmt.Errorf("xz index: %w", err)
	}
	if idx[0] != 0 {
		return 0, errors.New("xz: no index where the footer says")
	}
	r := bytes.NewReader(idx[1:])
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(backward) {
		return 0, errors.New("xz: bad index record count")
	}
	type rec struct{ unpadded int64 }
	var total int64
	recs := make([]rec, 0, min(n, 1<<16))
	for range n {
		u, err1 := binary.ReadUvarint(r)
		_, err2 := binary.ReadUvarint(r)
		if err1 != nil || err2 != nil || u > uint64(end) {
			return 0, errors.New("xz: bad index record")
		}
		recs = append(recs, rec{int64(u)})
		total += (int64(u) + 3) &^ 3
		if total > end {
			return 0, errors.New("xz: blocks larger than the file")
		}
	}
	start := idxStart - total - 12
	if start < 0 {
		return 0, errors.New("xz: blocks larger than the file")
	}
	var head [12]byte
	if _, err := ra.ReadAt(head[:], start); err != nil || !bytes.Equal(head[:6], []byte{0xfd, '7', 'z', 'X', 'Z', 0}) {
		return 0, errors.New("xz: no stream header where the index says")
	}
	off := start + 12
	for _, rc := range recs {
		if err := checkXzBlock(ra, off, maxDict); err != nil {
			return 0, err
		}
		off += (rc.unpadded + 3) &^ 3
	}
	return start, nil
}

// checkXzBlock reads the block header at off and checks its LZMA2
// dictionary.
func checkXzBlock(ra io.ReaderAt, off, maxDict int64) error {
	var b [1024]byte
	n, _ := ra.ReadAt(b[:], off)
	if n < 1 || b[0] == 0 {
		return errors.New("xz: no block header where the index says")
	}
	hsize := (int(b[0]) + 1) * 4
	if hsize > n {
		return errors.New("xz: truncated block header")
	}
	r := bytes.NewReader(b[2:hsize])
	flags := b[1]
	if flags&0x40 != 0 {
		if _, err := binary.ReadUvarint(r); err != nil {
			return errors.New("xz: bad block header")
		}
	}
	if flags&0x80 != 0 {
		if _, err := binary.ReadUvarint(r); err != nil {
			return errors.New("xz: bad block header")
		}
	}
	for range int(flags&3) + 1 {
		id, err1 := binary.ReadUvarint(r)
		psize, err2 := binary.ReadUvarint(r)
		if err1 != nil || err2 != nil || psize > uint64(r.Len()) {
			return errors.New("xz: bad filter flags")
		}
		props := make([]byte, psize)
		r.Read(props)
		if id == 0x21 && len(props) == 1 {
			if dict := lzma2Dict(props[0]); dict > maxDict {
				return fmt.Errorf("%w: an xz block asks for a %d MiB LZMA2 dictionary, the limit is %d MiB", errDict, dict>>20, maxDict>>20)
			}
		}
	}
	return nil
}

// lzma2Dict decodes an LZMA2 dictionary-size property byte.
func lzma2Dict(p byte) int64 {
	if p >= 40 {
		return 1<<32 - 1
	}
	return int64(2|p&1) << (p/2 + 11)
}
