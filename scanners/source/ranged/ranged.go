// Package ranged reads remote files in part: an io.ReaderAt over ranged
// requests (HTTP Range on a Hub file or a registry blob), with a block
// cache, sequential read-ahead, a read-ahead of a zip's local headers once
// its central directory is read, and a byte budget shared by every file of
// a target. A check reads such a file as it reads one on disk — a zip's
// directory and its pickle members, a safetensors header — and only those
// bytes cross the network.
package ranged

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// BlockSize is the unit of the cache: every fetch covers whole blocks. It
// is scanners.HeadSize, so the dispatcher's first read is one block.
const BlockSize = 8 << 10

// Defaults of Options.
const (
	// DefaultCacheBytes bounds the blocks one Reader keeps.
	DefaultCacheBytes = 32 << 20
	// DefaultWhole is the size up to which a file is fetched whole on its
	// first read: a small file costs one request.
	DefaultWhole = 64 << 10
	// maxReadAhead bounds the window a sequential reader grows to.
	maxReadAhead = 4 << 20
	// minReadAhead is the window of the first sequential read.
	minReadAhead = 64 << 10
	// prefetchParallel is how many ranges Prefetch fetches at once.
	prefetchParallel = 16
)

// Fetcher reads n bytes at offset off of one remote file in one request
// and returns exactly n bytes, or an error. It is called with 0 <= off,
// n > 0 and off+n <= the file's size, from several goroutines at once.
type Fetcher func(ctx context.Context, off, n int64) ([]byte, error)

// Budget counts the bytes the files of one target fetch and refuses a
// fetch that would take the total past its limit. It is safe for
// concurrent use.
type Budget struct {
	limit    int64
	used     atomic.Int64
	requests atomic.Int64

	mu      sync.Mutex
	refused map[string]bool
}

// NewBudget returns a budget of limit bytes; limit <= 0 is no limit.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit, refused: map[string]bool{}} }

// Limit is the budget's limit (<= 0: none).
func (b *Budget) Limit() int64 { return b.limit }

// Used is how many bytes were fetched.
func (b *Budget) Used() int64 { return b.used.Load() }

// Requests is how many ranged requests were made.
func (b *Budget) Requests() int64 { return b.requests.Load() }

// Refused lists, sorted, the paths that a fetch was refused for.
func (b *Budget) Refused() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.refused))
	for p := range b.refused {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Charge counts n bytes about to be downloaded for path by other means
// (a compressed layer streamed whole), or refuses them with a *LimitError.
func (b *Budget) Charge(path string, n int64) error { return b.take(path, n) }

// take reserves n bytes for path, or says why not.
func (b *Budget) take(path string, n int64) error {
	if b == nil {
		return nil
	}
	if b.limit > 0 {
		for {
			used := b.used.Load()
			if used+n > b.limit {
				b.mu.Lock()
				b.refused[path] = true
				b.mu.Unlock()
				return &LimitError{Path: path, Limit: b.limit, Used: used, Want: n}
			}
			if b.used.CompareAndSwap(used, used+n) {
				break
			}
		}
	} else {
		b.used.Add(n)
	}
	b.requests.Add(1)
	return nil
}

// give returns bytes reserved but not fetched.
func (b *Budget) give(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

// LimitError is the error of a read the budget refused.
type LimitError struct {
	Path              string
	Limit, Used, Want int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("not downloaded: %d more bytes would take this target past --download-limit %s (%s downloaded already); raise --download-limit to scan it",
		e.Want, FormatBytes(e.Limit), FormatBytes(e.Used))
}

// ErrLimit is matched by every LimitError (errors.Is).
var ErrLimit = errors.New("download limit reached")

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// Options configures a Reader.
type Options struct {
	// Path names the file in errors and in the budget's refusals.
	Path string
	// Budget, shared by a target's files, bounds what they fetch (nil: no bound).
	Budget *Budget
	// CacheBytes bounds the blocks kept (default DefaultCacheBytes).
	CacheBytes int64
	// Whole is the size up to which the file is fetched whole on its first
	// read (default DefaultWhole; negative: never).
	Whole int64
	// Verify, when set, is called with the whole content once every byte
	// of the file has been fetched (files that fit the cache): a digest
	// check. Its error fails that read and every later one.
	Verify func(data []byte) error
	// ZipReadAhead fetches, in parallel, the local headers of a zip
	// archive's members as soon as its central directory has been read
	// (a PyTorch checkpoint: the models check then visits every member's
	// header, one small read each, which would otherwise be one request
	// each, in turn).
	ZipReadAhead bool
}

// Reader is an io.ReaderAt (and an io.Reader from offset 0) over a Fetcher.
// It is safe for concurrent use.
type Reader struct {
	ctx   context.Context
	fetch Fetcher
	size  int64
	o     Options

	mu        sync.Mutex
	blocks    map[int64]*list.Element // block index → element of lru
	lru       *list.List              // of *block, most recent first
	maxBlocks int
	nextSeq   int64    // where a sequential read would start
	window    int64    // read-ahead window
	fetched   int64    // bytes fetched by this Reader
	extents   []extent // fetched ahead by Prefetch, sorted by offset
	members   []Range  // a zip's members, once its directory was read
	err       error    // sticky: a failed verification
	verified  bool
	zipDone   bool

	off int64 // for Read
}

type block struct {
	idx  int64
	data []byte
}

// New returns a Reader of the size bytes that fetch reads. ctx bounds every
// fetch made on behalf of the Reader.
func New(ctx context.Context, size int64, fetch Fetcher, o Options) *Reader {
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.Whole == 0 {
		o.Whole = DefaultWhole
	}
	return &Reader{
		ctx: ctx, fetch: fetch, size: size, o: o,
		blocks: map[int64]*list.Element{}, lru: list.New(),
		maxBlocks: int(max(o.CacheBytes/BlockSize, 4)),
		window:    minReadAhead,
	}
}

// Size is the file's size.
func (r *Reader) Size() int64 { return r.size }

// Fetched is how many bytes this Reader fetched.
func (r *Reader) Fetched() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetched
}

// Read reads from the current offset, starting at 0.
func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// ReadAt reads len(p) bytes at off, fetching the blocks it lacks.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("ranged: negative offset")
	}
	if off >= r.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := p
	if rest := r.size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	if len(want) == 0 {
		return 0, nil
	}
	var err error
	if data := r.extentLocked(off, int64(len(want))); data != nil {
		copy(want, data)
	} else if int64(len(want)) > r.o.CacheBytes/2 || r.blockReachesBack(off) {
		err = r.direct(want, off)
	} else {
		err = r.cached(want, off)
	}
	if err != nil {
		return 0, err
	}
	if r.o.ZipReadAhead && !r.zipDone && off > 0 && len(want) >= 46 && string(want[:4]) == "PK\x01\x02" {
		r.zipDone = true
		ms := zipMembers(want, r.size)
		headers := make([]Range, len(ms))
		for i, m := range ms {
			headers[i] = Range{Off: m.off, Len: 30 + m.nl}
		}
		r.prefetchLocked(headers)
		// Each member's span, header to end of data. The local header, now
		// fetched, gives the extra field's real length (PyTorch pads it
		// there, not in the directory).
		var spans []Range
		for _, m := range ms {
			if m.csize < 0 {
				continue
			}
			nl, xl := m.nl, m.xl
			if h := r.extentLocked(m.off, 30); h != nil && binary.LittleEndian.Uint32(h) == 0x04034b50 {
				nl, xl = int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
			}
			spans = append(spans, Range{Off: m.off, Len: 30 + nl + xl + m.csize})
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].Off < spans[j].Off })
		r.members = spans
	}
	if int64(len(want)) < int64(len(p)) {
		return len(want), io.EOF
	}
	return len(want), nil
}

// cached serves a read from the cache, fetching missing runs of blocks.
// A block may hold less than BlockSize bytes (a fetch that stopped at the
// end of a zip member): it serves the reads it covers.
func (r *Reader) cached(p []byte, off int64) error {
	need := off + int64(len(p))
	first, last := off/BlockSize, (need-1)/BlockSize
	sequential := off == r.nextSeq && off > 0
	for b := first; b <= last; {
		if r.holds(b, min(need, (b+1)*BlockSize)) {
			b++
			continue
		}
		// A run of missing blocks from b.
		end := b
		for end+1 <= last && !r.holds(end+1, min(need, (end+2)*BlockSize)) {
			end++
		}
		from, to := b*BlockSize, min((end+1)*BlockSize, r.size)
		switch {
		case r.fetched == 0 && r.size <= r.o.Whole:
			from, to = 0, r.size
		case sequential:
			to = min(max(to, from+r.window), r.size)
			r.window = min(r.window*2, maxReadAhead)
		}
		to = r.clampToMember(from, to, min(need, (end+1)*BlockSize))
		if err := r.fetchLocked(from, to); err != nil {
			return err
		}
		b = end + 1
	}
	if !sequential {
		r.window = minReadAhead
	}
	r.nextSeq = need
	// Copy out.
	for n := 0; n < len(p); {
		pos := off + int64(n)
		b := pos / BlockSize
		el, ok := r.blocks[b]
		if !ok || int64(len(el.Value.(*block).data)) <= pos-b*BlockSize {
			// Evicted while this read fetched others (the read is larger
			// than the cache allows at once), or a short block.
			if err := r.fetchLocked(b*BlockSize, min((b+1)*BlockSize, r.size)); err != nil {
				return err
			}
			continue
		}
		r.lru.MoveToFront(el)
		blk := el.Value.(*block)
		n += copy(p[n:], blk.data[pos-blk.idx*BlockSize:])
	}
	return r.verifyLocked()
}

// holds reports whether block b is cached with the file's bytes up to hi.
func (r *Reader) holds(b, hi int64) bool {
	el, ok := r.blocks[b]
	return ok && b*BlockSize+int64(len(el.Value.(*block).data)) >= hi
}

// blockReachesBack reports whether the block that holds off starts inside
// an earlier zip member than the one off is in, more than a few KiB before
// that member's end, once the directory has been read: fetching that block
// would fetch the end of the member before (a tensor's data before the
// next member's local header), so the read is fetched as it is asked
// instead.
func (r *Reader) blockReachesBack(off int64) bool {
	i := sort.Search(len(r.members), func(i int) bool { return r.members[i].Off > off }) - 1
	if i < 1 {
		return false
	}
	start := off / BlockSize * BlockSize
	prev := r.members[i-1]
	// More than the gap Prefetch fetches between small members anyway.
	return start < r.members[i].Off && prev.Off+prev.Len-start > prefetchGap
}

// clampToMember ends a fetch from from at the end of the zip member it is
// in, when the archive's directory has been read, but never before need
// (what the read itself asks for): reading a checkpoint's pickle does not
// fetch the tensor data after it, not even to the end of a block.
func (r *Reader) clampToMember(from, to, need int64) int64 {
	i := sort.Search(len(r.members), func(i int) bool { return r.members[i].Off > from }) - 1
	if i < 0 {
		return to
	}
	end := r.members[i].Off + r.members[i].Len
	if end <= from {
		return to
	}
	return max(need, min(to, end))
}

// direct serves a large read with its own fetches, caching nothing.
func (r *Reader) direct(p []byte, off int64) error {
	for n := int64(0); n < int64(len(p)); {
		chunk := min(int64(len(p))-n, maxReadAhead)
		data, err := r.get(off+n, chunk)
		if err != nil {
			return err
		}
		copy(p[n:], data)
		n += chunk
	}
	r.nextSeq = off + int64(len(p))
	return nil
}

// get fetches [off, off+n) against the budget.
func (r *Reader) get(off, n int64) ([]byte, error) {
	if err := r.o.Budget.take(r.o.Path, n); err != nil {
		return nil, err
	}
	data, err := r.fetch(r.ctx, off, n)
	if err != nil {
		r.o.Budget.give(n)
		return nil, err
	}
	if int64(len(data)) != n {
		r.o.Budget.give(n - int64(len(data)))
		return nil, fmt.Errorf("%s: short read at %d: %d of %d bytes", r.o.Path, off, len(data), n)
	}
	r.fetched += n
	return data, nil
}

// fetchLocked fetches [from, to), block aligned except at the end of the
// file, and caches its blocks.
func (r *Reader) fetchLocked(from, to int64) error {
	data, err := r.get(from, to-from)
	if err != nil {
		return err
	}
	r.insertLocked(from, data)
	return nil
}

func (r *Reader) insertLocked(from int64, data []byte) {
	for pos := int64(0); pos < int64(len(data)); pos += BlockSize {
		idx := (from + pos) / BlockSize
		chunk := data[pos:min(pos+BlockSize, int64(len(data)))]
		if el, ok := r.blocks[idx]; ok {
			r.lru.MoveToFront(el)
			if blk := el.Value.(*block); len(blk.data) < len(chunk) {
				blk.data = chunk
			}
			continue
		}
		r.blocks[idx] = r.lru.PushFront(&block{idx: idx, data: chunk})
		for r.lru.Len() > r.maxBlocks {
			old := r.lru.Back()
			r.lru.Remove(old)
			delete(r.blocks, old.Value.(*block).idx)
		}
	}
}

// verifyLocked runs Options.Verify once the whole file is in the cache.
func (r *Reader) verifyLocked() error {
	if r.o.Verify == nil || r.verified {
		return nil
	}
	n := (r.size + BlockSize - 1) / BlockSize
	if int64(len(r.blocks)) < n {
		return nil
	}
	for i := int64(0); i < n; i++ {
		if !r.holds(i, min((i+1)*BlockSize, r.size)) {
			return nil
		}
	}
	data := make([]byte, 0, r.size)
	for i := int64(0); i < n; i++ {
		data = append(data, r.blocks[i].Value.(*block).data...)
	}
	r.verified = true
	if err := r.o.Verify(data); err != nil {
		r.err = err
		return err
	}
	return nil
}

// Range is a span of a file: Off and Len bytes.
type Range struct{ Off, Len int64 }

// extent is an exact span fetched ahead (Prefetch), outside the blocks.
type extent struct {
	off  int64
	data []byte
}

// prefetchGap is the largest hole between two ranges that Prefetch
// fetches with them in one request (the few bytes of small zip members
// between their headers), rather than making two requests.
const prefetchGap = 4 << 10

// PrefetchRange fetches exactly [off, off+n) for a read about to come,
// not rounded to blocks: a zip's end record and directory, whose
// neighbouring blocks hold the last tensor's data.
func (r *Reader) PrefetchRange(off, n int64) { r.Prefetch([]Range{{Off: off, Len: n}}) }

// Prefetch fetches exactly the given ranges (merged where they touch or
// nearly do) that no block holds, up to half the cache, several requests
// at once, and keeps them apart from the blocks: a read inside one is
// served from it. Errors are left to the reads that need those bytes.
func (r *Reader) Prefetch(rs []Range) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prefetchLocked(rs)
}

func (r *Reader) prefetchLocked(rs []Range) {
	var in []Range
	for _, g := range rs {
		if g.Len <= 0 || g.Off < 0 || g.Off >= r.size {
			continue
		}
		g.Len = min(g.Off+g.Len, r.size) - g.Off
		if r.haveLocked(g.Off, g.Len) {
			continue
		}
		in = append(in, g)
	}
	sort.Slice(in, func(i, j int) bool { return in[i].Off < in[j].Off })
	var runs []Range
	var total int64
	for _, g := range in {
		if n := len(runs); n > 0 && g.Off <= runs[n-1].Off+runs[n-1].Len+prefetchGap && runs[n-1].Len < maxReadAhead {
			end := max(runs[n-1].Off+runs[n-1].Len, g.Off+g.Len)
			total += end - (runs[n-1].Off + runs[n-1].Len)
			runs[n-1].Len = end - runs[n-1].Off
			continue
		}
		runs = append(runs, g)
		total += g.Len
		if total > r.o.CacheBytes/2 {
			break
		}
	}
	results := make([]extent, len(runs))
	sem := make(chan struct{}, prefetchParallel)
	var wg sync.WaitGroup
	var fetched atomic.Int64
	for i, g := range runs {
		if err := r.o.Budget.take(r.o.Path, g.Len); err != nil {
			break // the reads that need them will say so
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			data, err := r.fetch(r.ctx, g.Off, g.Len)
			if err != nil || int64(len(data)) != g.Len {
				r.o.Budget.give(g.Len)
				return
			}
			fetched.Add(g.Len)
			results[i] = extent{g.Off, data}
		}()
	}
	wg.Wait()
	r.fetched += fetched.Load()
	for _, e := range results {
		if e.data != nil {
			r.extents = append(r.extents, e)
		}
	}
	sort.Slice(r.extents, func(i, j int) bool { return r.extents[i].off < r.extents[j].off })
}

// haveLocked reports whether [off, off+n) is in an extent or in cached blocks.
func (r *Reader) haveLocked(off, n int64) bool {
	if r.extentLocked(off, n) != nil {
		return true
	}
	for b := off / BlockSize; b <= (off+n-1)/BlockSize; b++ {
		if !r.holds(b, min(off+n, (b+1)*BlockSize)) {
			return false
		}
	}
	return true
}

// extentLocked returns the bytes [off, off+n) when one extent holds them.
func (r *Reader) extentLocked(off, n int64) []byte {
	i := sort.Search(len(r.extents), func(i int) bool { return r.extents[i].off > off }) - 1
	if i < 0 {
		return nil
	}
	e := r.extents[i]
	if off+n > e.off+int64(len(e.data)) {
		return nil
	}
	return e.data[off-e.off : off-e.off+n]
}

// FormatBytes writes n in binary units: 512 B, 1.5 KiB, 2.0 GiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
