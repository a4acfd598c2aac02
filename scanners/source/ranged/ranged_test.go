package ranged

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
)

// remote is a file behind a Fetcher that records every request: data,
// or, when data is nil, zeros bytes of zeros.
type remote struct {
	data  []byte
	zeros int64
	mu    sync.Mutex
	reqs  []Range
}

func (r *remote) fetch(_ context.Context, off, n int64) ([]byte, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, Range{off, n})
	r.mu.Unlock()
	size := int64(len(r.data))
	if r.data == nil {
		size = r.zeros
	}
	if off < 0 || n <= 0 || off+n > size {
		return nil, fmt.Errorf("bad range %d+%d of %d", off, n, size)
	}
	if r.data == nil {
		return make([]byte, n), nil
	}
	return bytes.Clone(r.data[off : off+n]), nil
}

func (r *remote) requests() []Range {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Range(nil), r.reqs...)
}

func (r *remote) bytes() int64 {
	var n int64
	for _, g := range r.requests() {
		n += g.Len
	}
	return n
}

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

func TestReadAtMatchesContent(t *testing.T) {
	for _, size := range []int{0, 1, BlockSize - 1, BlockSize, BlockSize + 1, 3<<20 + 17} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			rm := &remote{data: randomBytes(size, uint64(size))}
			rd := New(context.Background(), int64(size), rm.fetch, Options{Path: "f", CacheBytes: 1 << 20})
			rng := rand.New(rand.NewPCG(2, 3))
			for range 300 {
				off := int64(0)
				if size > 0 {
					off = rng.Int64N(int64(size) + 10)
				}
				n := rng.IntN(200 << 10)
				buf := make([]byte, n)
				got, err := rd.ReadAt(buf, off)
				wantN := max(0, min(n, size-int(off)))
				if got != wantN {
					t.Fatalf("ReadAt(%d, %d) = %d, want %d (%v)", n, off, got, wantN, err)
				}
				if wantN < n && err != io.EOF {
					t.Fatalf("ReadAt(%d, %d) short without io.EOF: %v", n, off, err)
				}
				if wantN == n && err != nil {
					t.Fatalf("ReadAt(%d, %d): %v", n, off, err)
				}
				if !bytes.Equal(buf[:got], rm.data[min(int(off), size):min(int(off), size)+got]) {
					t.Fatalf("ReadAt(%d, %d): wrong bytes", n, off)
				}
			}
			// Read reads the whole file in order.
			all, err := io.ReadAll(New(context.Background(), int64(size), rm.fetch, Options{}))
			if err != nil || !bytes.Equal(all, rm.data) {
				t.Fatalf("ReadAll: %d bytes, %v", len(all), err)
			}
		})
	}
}

func TestRequests(t *testing.T) {
	cases := []struct {
		name    string
		size    int
		reads   [][2]int64 // off, len
		maxReqs int
	}{
		// The dispatcher reads the head, then the rest of a small file.
		{"small file whole", 40 << 10, [][2]int64{{0, BlockSize}, {BlockSize, 32 << 10}}, 1},
		{"1 MiB file: head, then the rest", 1 << 20, [][2]int64{{0, BlockSize}, {BlockSize, 1<<20 - BlockSize}}, 2},
		// A safetensors header: 8 bytes, then the JSON.
		{"safetensors header", 4 << 30, [][2]int64{{0, BlockSize}, {0, 8}, {8, 30 << 10}}, 2},
		{"cached blocks are not fetched again", 1 << 30, [][2]int64{{0, BlockSize}, {100, 200}, {0, BlockSize}}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rm := &remote{zeros: int64(c.size)}
			rd := New(context.Background(), int64(c.size), rm.fetch, Options{})
			for _, r := range c.reads {
				if _, err := rd.ReadAt(make([]byte, r[1]), r[0]); err != nil {
					t.Fatal(err)
				}
			}
			if got := rm.requests(); len(got) > c.maxReqs {
				t.Errorf("%d requests %v, want at most %d", len(got), got, c.maxReqs)
			}
		})
	}
}

func TestSequentialReadAhead(t *testing.T) {
	const size = 24 << 20
	rm := &remote{data: randomBytes(size, 7)}
	rd := New(context.Background(), size, rm.fetch, Options{})
	var got bytes.Buffer
	if _, err := io.CopyBuffer(&got, io.NewSectionReader(rd, 0, size), make([]byte, 32<<10)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), rm.data) {
		t.Fatal("wrong bytes")
	}
	// 64 KiB doubling to 4 MiB: about 7 requests, then one per 4 MiB.
	if n := len(rm.requests()); n > 16 {
		t.Errorf("%d requests for a sequential read of 24 MiB in 32 KiB reads, want at most 16", n)
	}
	if b := rm.bytes(); b > size+maxReadAhead {
		t.Errorf("fetched %d bytes of %d", b, size)
	}
}

func TestBudget(t *testing.T) {
	b := NewBudget(100 << 10)
	rm := &remote{data: make([]byte, 10<<20)}
	a := New(context.Background(), 10<<20, rm.fetch, Options{Path: "a.bin", Budget: b})
	if _, err := a.ReadAt(make([]byte, 64<<10), 0); err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	c := New(context.Background(), 10<<20, rm.fetch, Options{Path: "c.bin", Budget: b})
	_, err := c.ReadAt(make([]byte, 64<<10), 5<<20)
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrLimit) || le.Path != "c.bin" {
		t.Fatalf("past the budget: %v, want a LimitError for c.bin", err)
	}
	if got := b.Refused(); len(got) != 1 || got[0] != "c.bin" {
		t.Errorf("Refused() = %v", got)
	}
	if b.Used() != 64<<10 || b.Used() != rm.bytes() {
		t.Errorf("Used() = %d, fetched %d", b.Used(), rm.bytes())
	}
	// No limit: everything is counted.
	u := NewBudget(-1)
	d := New(context.Background(), 10<<20, rm.fetch, Options{Budget: u})
	if _, err := d.ReadAt(make([]byte, 8<<20), 0); err != nil || u.Used() != 8<<20 {
		t.Fatalf("unbounded: %v, used %d", err, u.Used())
	}
	if err := NewBudget(10).Charge("x", 11); !errors.Is(err, ErrLimit) {
		t.Errorf("Charge past the limit: %v", err)
	}
}

func TestVerify(t *testing.T) {
	rm := &remote{data: randomBytes(100<<10, 9)}
	bad := errors.New("digest mismatch")
	calls := 0
	rd := New(context.Background(), 100<<10, rm.fetch, Options{Verify: func(data []byte) error {
		calls++
		if !bytes.Equal(data, rm.data) {
			t.Error("Verify got other bytes")
		}
		return bad
	}})
	if _, err := rd.ReadAt(make([]byte, 10), 0); err != nil {
		t.Fatalf("a partial read is not verified: %v", err)
	}
	if _, err := rd.ReadAt(make([]byte, 100<<10), 0); !errors.Is(err, bad) {
		t.Fatalf("the read that completes the file: %v, want the verification error", err)
	}
	if _, err := rd.ReadAt(make([]byte, 10), 0); !errors.Is(err, bad) || calls != 1 {
		t.Fatalf("later reads: %v (%d calls), want the same error, one call", err, calls)
	}
	ok := New(context.Background(), 100<<10, rm.fetch, Options{Verify: func([]byte) error { return nil }})
	if _, err := ok.ReadAt(make([]byte, 100<<10), 0); err != nil {
		t.Fatal(err)
	}
}

// zipOf writes a zip of stored members: small ones, then n members of
// size bytes each (as a PyTorch checkpoint's tensors), then small ones.
func zipOf(t *testing.T, n int, size int) ([]byte, []string) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	var names []string
	add := func(name string, data []byte) {
		f, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		f.Write(data)
		names = append(names, name)
	}
	add("archive/data.pkl", []byte("\x80\x02}q\x00."))
	add("archive/byteorder", []byte("little"))
	for i := range n {
		add(fmt.Sprintf("archive/data/%d", i), make([]byte, size))
	}
	add("archive/version", []byte("3\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), names
}

// readLikeModels reads a zip as the models check does: the tail, the
// central directory, then each member's local header and name.
func readLikeModels(t *testing.T, rd io.ReaderAt, size int64) int {
	tail := min(int64(65535+22+20), size)
	buf := make([]byte, tail)
	if _, err := rd.ReadAt(buf, size-tail); err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 {
		t.Fatal("no end record")
	}
	cdSize := int64(binary.LittleEndian.Uint32(buf[i+12:]))
	cdOff := int64(binary.LittleEndian.Uint32(buf[i+16:]))
	cd := make([]byte, cdSize)
	if _, err := rd.ReadAt(cd, cdOff); err != nil {
		t.Fatal(err)
	}
	members := 0
	for len(cd) >= 46 {
		nl, xl, cl := int(binary.LittleEndian.Uint16(cd[28:])), int(binary.LittleEndian.Uint16(cd[30:])), int(binary.LittleEndian.Uint16(cd[32:]))
		off := int64(binary.LittleEndian.Uint32(cd[42:]))
		h := make([]byte, 30)
		if _, err := rd.ReadAt(h, off); err != nil || binary.LittleEndian.Uint32(h) != 0x04034b50 {
			t.Fatalf("local header at %d: %v", off, err)
		}
		name := make([]byte, binary.LittleEndian.Uint16(h[26:]))
		if _, err := rd.ReadAt(name, off+30); err != nil || string(name) != string(cd[46:46+nl]) {
			t.Fatalf("local name at %d: %q, %v", off, name, err)
		}
		members++
		cd = cd[46+nl+xl+cl:]
	}
	return members
}

func TestZipReadAhead(t *testing.T) {
	const tensors, tensorSize = 200, 256 << 10
	data, names := zipOf(t, tensors, tensorSize)
	size := int64(len(data))
	for _, ahead := range []bool{false, true} {
		t.Run(fmt.Sprintf("ZipReadAhead=%v", ahead), func(t *testing.T) {
			rm := &remote{data: data}
			rd := New(context.Background(), size, rm.fetch, Options{ZipReadAhead: ahead})
			if _, err := rd.ReadAt(make([]byte, BlockSize), 0); err != nil { // the dispatcher's head
				t.Fatal(err)
			}
			if n := readLikeModels(t, rd, size); n != len(names) {
				t.Fatalf("read %d members, want %d", n, len(names))
			}
			reqs, fetched := len(rm.requests()), rm.bytes()
			t.Logf("%d members: %d requests, %d bytes of %d (%.2f%%)", n(names), reqs, fetched, size, 100*float64(fetched)/float64(size))
			if !ahead {
				if reqs < tensors {
					t.Errorf("without read-ahead, %d requests: expected one per member", reqs)
				}
				return
			}
			// The head block and the tail, then one request per header
			// run, made ahead (in parallel) once the directory was read: no
			// header read waits for a request of its own.
			if reqs > len(names)+2 {
				t.Errorf("%d requests for %d members", reqs, len(names))
			}
			// What is fetched of the tensors' data: nothing but what the
			// tail read reaches and the gaps between small members.
			tensorBytes := int64(0)
			for _, g := range rm.requests()[1:] {
				if g.Len < 1<<10 {
					tensorBytes += max(0, g.Len-(30+int64(len("archive/data/000"))))
				}
			}
			if fetched > size/100 {
				t.Errorf("fetched %d bytes, more than 1%% of %d", fetched, size)
			}
			if tensorBytes > int64(tensors)*prefetchGap/4 {
				t.Errorf("read-ahead requests carry %d bytes beyond the headers", tensorBytes)
			}
		})
	}
}

func n(s []string) int { return len(s) }

func TestZipLocalHeaders(t *testing.T) {
	data, names := zipOf(t, 3, 100)
	r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(data, []byte("PK\x05\x06"))
	cdOff := binary.LittleEndian.Uint32(data[i+16:])
	got := zipLocalHeaders(data[cdOff:i], int64(len(data)))
	if len(got) != len(names) {
		t.Fatalf("%d ranges for %d members", len(got), len(names))
	}
	for k, f := range r.File {
		off, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		// The range covers the header and the name, and stops where the
		// member's data starts.
		if got[k].Off+got[k].Len > off || got[k].Off+30+int64(len(f.Name)) != got[k].Off+got[k].Len {
			t.Errorf("%s: range %+v, data at %d", f.Name, got[k], off)
		}
	}
	if zipLocalHeaders([]byte("PK\x01\x02short"), 100) != nil {
		t.Error("a truncated entry gave ranges")
	}
}

func FuzzZipLocalHeaders(f *testing.F) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	fw, _ := w.Create("archive/data.pkl")
	fw.Write([]byte("x"))
	w.Close()
	data := buf.Bytes()
	i := bytes.LastIndex(data, []byte("PK\x05\x06"))
	f.Add(data[binary.LittleEndian.Uint32(data[i+16:]):i], int64(len(data)))
	f.Add([]byte("PK\x01\x02"), int64(10))
	f.Fuzz(func(t *testing.T, cd []byte, size int64) {
		for _, g := range zipLocalHeaders(cd, size) {
			if g.Off < 0 || g.Off >= size || g.Len < 30 {
				t.Fatalf("range %+v of a %d-byte file", g, size)
			}
		}
	})
}
