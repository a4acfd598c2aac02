//go:build !mlwarden_sbatch

package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/mlwarden/mlwarden/internal/registrytest"
	"github.com/mlwarden/mlwarden/scanners"
)

func imgRandom(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestImgSpill: what goes through the ring file comes out the same, in
// pieces of every size, while the ring wraps many times; the writer's error
// comes after the data; a reader that gives up releases a writer waiting on
// a full ring.
func TestImgSpill(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	big := imgRandom(r, 3<<20+17)
	for _, ring := range []int64{1, 4093, 64 << 10, 8 << 20} {
		data := big
		if ring == 1 {
			data = big[:10000] // a system call a byte
		}
		for _, werr := range []error{nil, errors.New("blob truncated")} {
			t.Run(fmt.Sprintf("ring %d err %v", ring, werr), func(t *testing.T) {
				s, err := newImgSpill(t.TempDir(), ring)
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					wr := rand.New(rand.NewPCG(3, 4))
					for rest := data; len(rest) > 0; {
						n := min(len(rest), 1+wr.IntN(300<<10))
						if !s.write(slices.Clone(rest[:n])) {
							return
						}
						rest = rest[n:]
					}
					s.closeWrite(werr)
				}()
				var got bytes.Buffer
				rr := rand.New(rand.NewPCG(5, 6))
				var rerr error
				for {
					buf := make([]byte, 1+rr.IntN(100<<10))
					n, err := s.Read(buf)
					got.Write(buf[:n])
					if err != nil {
						rerr = err
						break
					}
				}
				s.closeRead()
				if !bytes.Equal(got.Bytes(), data) {
					t.Errorf("read %d bytes, not the %d written", got.Len(), len(data))
				}
				want := werr
				if want == nil {
					want = io.EOF
				}
				if rerr != want {
					t.Errorf("read ends with %v, want %v", rerr, want)
				}
				if !s.fileClosed {
					t.Error("the ring's file is still open")
				}
			})
		}
	}

	t.Run("reader gives up", func(t *testing.T) {
		s, err := newImgSpill(t.TempDir(), 1024)
		if err != nil {
			t.Fatal(err)
		}
		res := make(chan bool)
		go func() { res <- s.write(make([]byte, 4096)) }() // more than the ring
		time.Sleep(10 * time.Millisecond)
		s.closeRead()
		select {
		case ok := <-res:
			if ok {
				t.Error("write into an abandoned ring succeeded")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("writer still waiting on a full ring after closeRead")
		}
		if s.write([]byte("more")) {
			t.Error("write after closeRead succeeded")
		}
		if !s.fileClosed {
			t.Error("the ring's file is still open")
		}
	})
}

// TestImgHasher: the hash made in its own goroutine is SHA-256 of what was
// written, whatever the sizes of the writes.
func TestImgHasher(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, size := range []int{0, 1, imgChunk - 1, imgChunk, imgChunk + 1, imgChunk*imgHashQueue*3 + 5} {
		data := imgRandom(r, size)
		h := newImgHasher()
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+r.IntN(imgChunk*2))
			h.Write(rest[:n])
			rest = rest[n:]
		}
		want := sha256.Sum256(data)
		if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Errorf("%d bytes: %x, want %x", size, got, want)
		}
		h.Close() // again: no effect
	}
}

// imgParallelImage is a multi-layer image with bulk (incompressible bytes,
// so that rings wrap), files over imgBufferMax (handed over as streams),
// deletions by whiteout, an opaque directory and replaced files.
func imgParallelImage(t *testing.T) v1.Image {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 10))
	bulk := func(prefix string, n int) []imgTestEntry {
		var es []imgTestEntry
		for i := range n {
			body := string(imgRandom(r, 2<<10+r.IntN(96<<10)))
			if i%5 == 0 {
				body += "\nSECRET-MARKER " + prefix + "\n"
			}
			es = append(es, imgTestEntry{name: fmt.Sprintf("%s/f%03d.txt", prefix, i), body: body})
		}
		return es
	}
	big := func(marker string) string {
		return string(imgRandom(r, imgBufferMax+(1<<20))) + "\nHF_TOKEN=" + marker + "\n"
	}
	l1 := imgTestLayer(t, compression.GZip, append([]imgTestEntry{
		{name: "app/", typ: tar.TypeDir},
		{name: "app/.env", body: "HF_TOKEN=" + imgTestSecret("hf_", 11) + "\n"},
		{name: "app/model.pkl", body: imgTestPickle() + "\nSECRET-MARKER old model\n"},
		{name: "opt/old/notes.txt", body: "SECRET-MARKER old notes\n"},
		{name: "data/big.bin", body: big(imgTestSecret("hf_", 12))},
	}, bulk("lib1", 40)...)...)
	l2 := imgTestLayer(t, compression.ZStd, append([]imgTestEntry{
		{name: "app/.wh..env", typ: tar.TypeReg},
		{name: "lib1/.wh.f005.txt", typ: tar.TypeReg},
	}, bulk("lib2", 30)...)...)
	l3 := imgTestLayer(t, compression.GZip, append([]imgTestEntry{
		{name: "app/model.pkl", body: "SECRET-MARKER new model\n"},
		{name: "opt/.wh..wh..opq", typ: tar.TypeReg},
		{name: "opt/new.txt", body: "SECRET-MARKER new\n"},
		{name: "data/big.bin", body: big(imgTestSecret("hf_", 13))},
	}, bulk("lib3", 30)...)...)
	l4 := imgTestLayer(t, compression.GZip, append([]imgTestEntry{
		{name: "lib2/.wh.f010.txt", typ: tar.TypeReg},
	}, bulk("lib4", 20)...)...)
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: l1, History: v1.History{CreatedBy: "COPY . /"}},
		mutate.Addendum{Layer: l2, History: v1.History{CreatedBy: "RUN rm /app/.env"}},
		mutate.Addendum{Layer: l3, History: v1.History{CreatedBy: "RUN fix"}},
		mutate.Addendum{Layer: l4, History: v1.History{CreatedBy: "RUN more"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// imgWalkDigest lists what a scan saw and found, sorted: every artifact
// with its layer and note, every finding with its message, every error.
func imgWalkDigest(res *scanners.Result, rec *imgRecorder) []string {
	var out []string
	rec.mu.Lock()
	for _, s := range rec.seen {
		sum := sha256.Sum256([]byte(s.body))
		out = append(out, fmt.Sprintf("artifact %s layer=%d %s note=%q size=%d sha=%x", s.a.Path, s.a.LayerIndex, s.a.Layer, s.a.Note, s.a.Size, sum[:8]))
	}
	rec.mu.Unlock()
	for _, f := range res.Findings {
		out = append(out, fmt.Sprintf("finding %s %s:%d layer=%s %q %s", f.RuleID, f.Path, f.Line, f.Layer, f.Message, f.Fingerprint))
	}
	for _, e := range res.Errors {
		out = append(out, "error "+e.Error())
	}
	slices.Sort(out)
	return out
}

// TestImageParallelSameFindings: layers decompressed ahead into ring files
// that wrap (many layers ahead, small rings) give what layers streamed one
// at a time through memory give: the same artifacts with the same notes,
// the same findings, no error. Run it with -race.
func TestImageParallelSameFindings(t *testing.T) {
	img := imgParallelImage(t)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	oci := imgWriteOCI(t, img, nil)
	archive := imgWriteArchive(t, img)
	ref := registrytest.Repo(t, registrytest.Any(t)) + ":parallel"
	registrytest.PushImage(t, img, ref)
	for _, src := range []struct{ scheme, ref string }{
		{SchemeOCI, oci}, {SchemeDockerArchive, archive}, {SchemeRegistry, ref},
	} {
		t.Run(src.scheme, func(t *testing.T) {
			// One file at a time, one layer ahead, in memory: the walk as
			// it was before layers were spilled ahead.
			res, rec := imgScan(t, src.scheme, src.ref, Options{Concurrency: 1, spillBytes: -1})
			want := imgWalkDigest(res, rec)
			if len(res.Errors) > 0 || len(res.Findings) == 0 {
				t.Fatalf("reference scan:\n%s", imgDump(res))
			}
			// The reference is right where it matters.
			d0, _ := layers[0].DiffID()
			for _, w := range []string{
				fmt.Sprintf("artifact /app/.env layer=0 %s note=%q", d0, "deleted in layer 2 — still present in the image"),
				fmt.Sprintf("artifact /lib1/f005.txt layer=0 %s note=%q", d0, "deleted in layer 2 — still present in the image"),
				fmt.Sprintf("artifact /app/model.pkl layer=0 %s note=%q", d0, "replaced in layer 3 — the old copy is still present in the image"),
				fmt.Sprintf("artifact /data/big.bin layer=0 %s note=%q", d0, "replaced in layer 3 — the old copy is still present in the image"),
				fmt.Sprintf("artifact /opt/old/notes.txt layer=0 %s note=%q", d0, "deleted in layer 3 — still present in the image"),
				"artifact /opt/new.txt layer=2 ",
				"artifact /lib2/f010.txt layer=1 ",
			} {
				if !slices.ContainsFunc(want, func(s string) bool { return strings.HasPrefix(s, w) }) {
					t.Errorf("reference scan: no %q in\n%s", w, strings.Join(want, "\n"))
				}
			}
			for _, o := range []Options{
				{Concurrency: 2},                         // the defaults on two cores
				{Concurrency: 8, spillBytes: 64<<10 + 7}, // four layers ahead, rings that wrap
				{Concurrency: 3, spillBytes: 4093},
			} {
				res, rec := imgScan(t, src.scheme, src.ref, o)
				got := imgWalkDigest(res, rec)
				if !slices.Equal(got, want) {
					t.Errorf("concurrency %d, ring %d: differs from one layer at a time in memory:\n got:\n%s\nwant:\n%s",
						o.Concurrency, o.spillBytes, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}
