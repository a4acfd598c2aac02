package hf

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// fileGetter reads byte ranges of one file at one commit through
// /{repo}/resolve/{commit}/{path}, remembering where the Hub redirected
// (a signed URL on the file host) so that later ranges go there at once.
type fileGetter struct {
	c       *client
	ref     Ref
	commit  string
	f       File
	resolve string

	mu     sync.Mutex
	direct string // the redirect's target, once known
}

func newFileGetter(c *client, r Ref, commit string, f File) *fileGetter {
	segs := []string{}
	if p := r.prefix(); p != "" {
		segs = append(segs, strings.TrimSuffix(p, "/"))
	}
	segs = append(segs, r.ID, "resolve", commit, f.Path)
	return &fileGetter{c: c, ref: r, commit: commit, f: f, resolve: c.url(segs...)}
}

// fetch reads n bytes at off: one GET with a Range header.
func (g *fileGetter) fetch(ctx context.Context, off, n int64) ([]byte, error) {
	what := g.f.Path
	g.mu.Lock()
	u := g.direct
	g.mu.Unlock()
	viaHub := u == ""
	if viaHub {
		u = g.resolve
	}
	hdr := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}
	resp, err := g.c.get(ctx, u, hdr, what)
	if err != nil && !viaHub && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrInsecure) {
		// A signed URL may have expired: ask the Hub again, once.
		g.mu.Lock()
		g.direct = ""
		g.mu.Unlock()
		viaHub = true
		resp, err = g.c.get(ctx, g.resolve, hdr, what)
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if viaHub {
		if err := g.checkHub(resp.first); err != nil {
			return nil, err
		}
		if resp.final.String() != g.resolve {
			g.mu.Lock()
			g.direct = resp.final.String()
			g.mu.Unlock()
		}
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, end, total, ok := contentRange(resp.Header.Get("Content-Range"))
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: the server's Content-Range %q does not parse", what, resp.Header.Get("Content-Range"))
		case total >= 0 && total != g.f.Size:
			return nil, g.changed(fmt.Sprintf("the server serves %d bytes, the tree lists %d", total, g.f.Size))
		case start != off || end != off+n-1:
			return nil, fmt.Errorf("%s: asked for bytes %d-%d, the server sent %d-%d", what, off, off+n-1, start, end)
		}
	case http.StatusOK:
		// The whole file: a server that ignores Range. Take the start of it
		// when that is what was asked; never read a large prefix to skip.
		if resp.ContentLength >= 0 && resp.ContentLength != g.f.Size {
			return nil, g.changed(fmt.Sprintf("the server serves %d bytes, the tree lists %d", resp.ContentLength, g.f.Size))
		}
		if off != 0 {
			return nil, fmt.Errorf("%s: the server does not honour byte ranges (it answered a ranged request with the whole file); only a server that does can be scanned without downloading everything", what)
		}
	default:
		return nil, fmt.Errorf("%s: unexpected %s", what, resp.Status)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: read bytes %d-%d: %s", what, off, off+n-1, redactErr(err))
	}
	return buf, nil
}

// checkHub compares what the Hub says about the file (on its own answer,
// before any redirect) with the tree: the commit, the size and the etag
// (the sha256 of an LFS file, else its git blob id).
func (g *fileGetter) checkHub(h http.Header) error {
	if c := h.Get("X-Repo-Commit"); c != "" && !strings.EqualFold(c, g.commit) {
		return g.changed(fmt.Sprintf("the Hub serves it from commit %s, not %s", c, g.commit))
	}
	if s := h.Get("X-Linked-Size"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n != g.f.Size {
			return g.changed(fmt.Sprintf("the Hub says %d bytes, the tree lists %d", n, g.f.Size))
		}
	}
	etag := h.Get("X-Linked-Etag")
	if etag == "" {
		etag = h.Get("ETag")
	}
	etag = strings.ToLower(strings.Trim(strings.TrimPrefix(etag, "W/"), `"`))
	switch {
	case len(etag) == 64 && g.f.LFS != nil && isHex(etag) && etag != strings.ToLower(g.f.LFS.OID):
		return g.changed(fmt.Sprintf("its sha256 is now %s, the tree lists %s", etag[:12], short(g.f.LFS.OID)))
	case len(etag) == 40 && g.f.LFS == nil && g.f.OID != "" && isHex(etag) && etag != g.f.OID:
		return g.changed(fmt.Sprintf("its git blob id is now %s, the tree lists %s", etag[:12], short(g.f.OID)))
	}
	return nil
}

func (g *fileGetter) changed(why string) error {
	return &hubError{ErrChanged, fmt.Sprintf("%s: %v at commit %s: %s; scan again (a proxy or mirror may be serving stale or altered content)", g.f.Path, ErrChanged, short(g.commit), why)}
}

// verify checks a file fetched whole against the tree's digest.
func (g *fileGetter) verify(data []byte) error {
	if g.f.LFS != nil && len(g.f.LFS.OID) == 64 {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != strings.ToLower(g.f.LFS.OID) {
			return g.changed(fmt.Sprintf("the bytes' sha256 is %s, the tree lists %s", got[:12], short(g.f.LFS.OID)))
		}
		return nil
	}
	if len(g.f.OID) == 40 {
		if got := gitBlobID(data); got != g.f.OID {
			return g.changed(fmt.Sprintf("the bytes' git blob id is %s, the tree lists %s", got[:12], short(g.f.OID)))
		}
	}
	return nil
}

// gitBlobID is the git object id of a blob: sha1 of "blob SIZE\0" + data.
func gitBlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// contentRange parses "bytes START-END/TOTAL" (TOTAL may be "*": -1).
func contentRange(s string) (start, end, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	span, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	start, err1 = strconv.ParseInt(a, 10, 64)
	end, err2 = strconv.ParseInt(b, 10, 64)
	total = -1
	if tot != "*" {
		total, err3 = strconv.ParseInt(tot, 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil || start < 0 || end < start {
		return 0, 0, 0, false
	}
	return start, end, total, true
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
