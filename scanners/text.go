package scanners

import (
	"bytes"
	"context"
	"io"
	"path"
	"strings"
)

// IsBinary reports whether head looks like binary content: a NUL byte in the
// first 8000 bytes, as git decides.
func IsBinary(head []byte) bool {
	if len(head) > 8000 {
		head = head[:8000]
	}
	return bytes.IndexByte(head, 0) >= 0
}

// Base returns the artifact path's last element, lower-cased.
func Base(p string) string {
	return strings.ToLower(path.Base(p))
}

// ReadAll reads c whole, or at most limit bytes when limit > 0; truncated
// reports whether content was left unread.
func ReadAll(c Content, limit int64) (data []byte, truncated bool, err error) {
	size := c.Size()
	if limit > 0 && size > limit {
		size, truncated = limit, true
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
