package scanners

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"path"
	"strings"
	"unicode/utf8"
)

// IsBinary reports whether head looks like binary content rather than text.
// Text is what is mostly printable: a head with no NUL byte in its first
// 8000 bytes is text (as git decides), and so is one with a few NUL or other
// control bytes, or a few bytes that are not UTF-8, among printable
// characters. More than one byte in binaryShare is needed to make it binary
// (executables, UTF-16, compressed data), so that a NUL byte put in front of
// a credential does not hide it from the text checks.
func IsBinary(head []byte) bool {
	if len(head) > 8000 {
		head = head[:8000]
	}
	if bytes.IndexByte(head, 0) < 0 {
		return false
	}
	bad, limit := 0, len(head)/binaryShare
	for i := 0; i < len(head) && bad <= limit; {
		c := head[i]
		if c < utf8.RuneSelf {
			if c == 0x7f || c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b {
				bad++
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 {
			if !utf8.FullRune(head[i:]) {
				break // a character cut by the end of the head
			}
			bad++
		}
		i += n
	}
	return bad > limit
}

// binaryShare: a head is binary when more than 1/binaryShare of its bytes
// are control bytes or not UTF-8.
const binaryShare = 10

// Base returns the artifact path's last element, lower-cased: of an
// archive member (dist/app.whl!pkg/config.py, a.zip!conf.env), the
// member's.
func Base(p string) string {
	b := path.Base(p)
	if i := strings.LastIndexByte(b, '!'); i >= 0 && i < len(b)-1 {
		b = b[i+1:]
	}
	return strings.ToLower(b)
}

// ReadAll reads c whole, or at most limit bytes when limit > 0; truncated
// reports whether content was left unread. When the dispatcher holds the
// content in memory, data is a view of it, shared with the other checks
// scanning it at the same time: a check never writes to what ReadAll
// returns (TestReadAllViewReadOnly runs every check on read-only memory).
func ReadAll(c Content, limit int64) (data []byte, truncated bool, err error) {
	size := c.Size()
	if limit > 0 && size > limit {
		size, truncated = limit, true
	}
	if b, ok := MemBytes(c); ok && int64(len(b)) >= size {
		// No copy of a file every check reads whole: that copy was a
		// quarter of all a scan allocated.
		return b[:size:size], truncated, nil
	}
	buf := make([]byte, size)
	n, err := c.ReadAt(buf, 0)
	if err == io.EOF {
		err = nil
	}
	return buf[:n], truncated, err
}

// ScanBytes runs one scanner on in-memory content as the dispatcher would
// (Wants first, then Scan). Tests and the BytesScanner hand-over use it.
func ScanBytes(ctx context.Context, sc Scanner, a *Artifact, data []byte) ([]Finding, error) {
	a.Size = int64(len(data))
	head := data
	if len(head) > HeadSize {
		head = head[:HeadSize]
	}
	if !sc.Wants(a, head) {
		return nil, nil
	}
	return sc.Scan(ctx, a, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))))
}

// memReaderAt is content the dispatcher holds in memory, read at offsets;
// ReadAll hands out views of it.
type memReaderAt []byte

func (m memReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("read at a negative offset")
	}
	if off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// MemContent is data as the content of an artifact the dispatcher holds in
// memory: what ReadAll returns from it is data itself, not a copy.
func MemContent(data []byte) Content {
	return io.NewSectionReader(memReaderAt(data), 0, int64(len(data)))
}

// MemBytes returns the bytes of c when the dispatcher holds c in memory
// (MemContent): a view, shared with the other checks, never written to.
func MemBytes(c Content) ([]byte, bool) { return memBytesOf(c) }

// memBytesOf is MemBytes of any reader.
func memBytesOf(r io.Reader) ([]byte, bool) {
	sr, ok := r.(*io.SectionReader)
	if !ok {
		return nil, false
	}
	outer, off, n := sr.Outer()
	m, ok := outer.(memReaderAt)
	if !ok || off < 0 || n < 0 || off > int64(len(m)) || n > int64(len(m))-off {
		return nil, false
	}
	return m[off : off+n : off+n], true
}

// Lines yields the lines of data with their 1-based numbers, each without
// its '\n' (a '\r' before it stays), as views of data: a text read line by
// line without a string per line, or one slice of them all.
func Lines(data []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		for n := 1; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if !yield(n, line) {
				return
			}
		}
	}
}
