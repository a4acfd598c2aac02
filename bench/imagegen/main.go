// Command imagegen builds the image source's benchmark image and measures
// plain decompression of its layers, the baseline for layer throughput.
//
//	go run ./bench/imagegen -push 127.0.0.1:5000/bench/ml:1 [-size 1024] [-layers 24]
//	go run ./bench/imagegen -decompress 127.0.0.1:5000/bench/ml:1
//
// The image holds text (source-like lines), binaries (incompressible bytes
// behind an ELF header) and model files (safetensors, npy, a harmless
// pickle), a few fake credentials generated from the seed, and a credential
// file deleted by a later layer. Everything is generated from -seed, so two
// runs give the same image (and digests).
package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	push := flag.String("push", "", "build the image and push it to this reference")
	decompress := flag.String("decompress", "", "fetch every layer of this image and gunzip it to nowhere; print the time")
	size := flag.Int("size", 1024, "uncompressed size in MiB")
	layers := flag.Int("layers", 24, "number of layers")
	seed := flag.Uint64("seed", 1, "seed of everything generated")
	work := flag.String("work", filepath.Join(os.TempDir(), "mlwarden-imagegen"), "where layer blobs are written")
	flag.Parse()
	log.SetFlags(0)
	switch {
	case *push != "":
		if err := build(*push, *size, *layers, *seed, *work); err != nil {
			log.Fatal(err)
		}
	case *decompress != "":
		if err := gunzipAll(*decompress); err != nil {
			log.Fatal(err)
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
}

type gen struct {
	r *rand.Rand
}

var words = strings.Fields(`import from def class return self if else elif for in while try except
finally with as lambda yield None True False model tensor torch numpy np data loader batch size
epoch optimizer learning_rate loss forward backward config path os sys json yaml logging logger
train eval checkpoint state_dict cuda device float32 shape layer weight bias hidden dropout
attention head token tokenizer vocab embedding sequence length mask input output result value key`)

func (g *gen) text(n int) []byte {
	var b strings.Builder
	b.Grow(n + 128)
	for b.Len() < n {
		indent := g.r.IntN(3) * 4
		b.WriteString(strings.Repeat(" ", indent))
		k := 3 + g.r.IntN(9)
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			w := words[g.r.IntN(len(words))]
			b.WriteString(w)
			switch g.r.IntN(12) {
			case 0:
				b.WriteString("(")
			case 1:
				b.WriteString(") =")
			case 2:
				fmt.Fprintf(&b, "_%d", g.r.IntN(100))
			case 3:
				b.WriteString(".")
			}
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func (g *gen) random(n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], g.r.Uint64())
	}
	return b
}

func (g *gen) token(prefix string, n int) string {
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b strings.Builder
	b.WriteString(prefix)
	for range n {
		b.WriteByte(abc[g.r.IntN(len(abc))])
	}
	return b.String()
}

type file struct {
	name string
	data []byte
}

// layerFiles makes about budget bytes of files for layer i.
func (g *gen) layerFiles(i, budget int) []file {
	var fs []file
	used := 0
	add := func(name string, data []byte) {
		fs = append(fs, file{name, data})
		used += len(data)
	}
	switch i % 4 {
	case 0, 2: // source trees and configs
		for n := 0; used < budget; n++ {
			add(fmt.Sprintf("usr/lib/python3/site-packages/pkg%d/mod%d/file%d.py", i, n/50, n), g.text(2<<10+g.r.IntN(60<<10)))
		}
	case 1: // binaries
		for n := 0; used < budget; n++ {
			b := g.random(100<<10 + g.r.IntN(4<<20))
			copy(b, "\x7fELF\x02\x01\x01")
			add(fmt.Sprintf("usr/lib/x86_64-linux-gnu/lib%d_%d.so", i, n), b)
		}
	case 3: // models
		for n := 0; used < budget; n++ {
			switch n % 3 {
			case 0:
				data := g.random((8<<20 + g.r.IntN(24<<20)) &^ 3) // whole F32s
				hdr, _ := json.Marshal(map[string]any{"weight": map[string]any{"dtype": "F32", "shape": []int{len(data) / 4}, "data_offsets": []int{0, len(data)}}})
				b := make([]byte, 8, 8+len(hdr)+len(data))
				binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
				add(fmt.Sprintf("models/m%d/model-%d.safetensors", i, n), append(append(b, hdr...), data...))
			case 1:
				data := g.random((1<<20 + g.r.IntN(8<<20)) &^ 3)
				hdr := "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (" + fmt.Sprint(len(data)/4) + ",), }"
				hdr += strings.Repeat(" ", 127-len(hdr)) + "\n"
				add(fmt.Sprintf("models/m%d/emb-%d.npy", i, n), append([]byte(hdr), data...))
			case 2:
				add(fmt.Sprintf("models/m%d/head-%d.pkl", i, n), []byte("\x80\x02cbuiltins\nprint\nq\x00X\x02\x00\x00\x00hiq\x01\x85q\x02Rq\x03."))
			}
		}
	}
	return fs
}

// writeLayer writes a gzip tar blob and returns its path.
func writeLayer(path string, fs []file, whiteouts []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, _ := kgzip.NewWriterLevel(f, kgzip.BestSpeed)
	tw := tar.NewWriter(zw)
	mt := time.Unix(1700000000, 0)
	for _, w := range whiteouts {
		if err := tw.WriteHeader(&tar.Header{Name: w, Typeflag: tar.TypeReg, Mode: 0o644, ModTime: mt}); err != nil {
			return err
		}
	}
	for _, fl := range fs {
		if err := tw.WriteHeader(&tar.Header{Name: fl.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(fl.data)), ModTime: mt}); err != nil {
			return err
		}
		if _, err := tw.Write(fl.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func build(ref string, sizeMiB, nlayers int, seed uint64, work string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	g := &gen{r: rand.New(rand.NewPCG(seed, seed+1))}
	budget := sizeMiB << 20 / nlayers
	img := empty.Image
	start := time.Now()
	var total int64
	for i := range nlayers {
		fs := g.layerFiles(i, budget)
		var wh []string
		switch i {
		case 1:
			fs = append(fs, file{"app/secrets/.env", []byte("HF_TOKEN=" + g.token("hf_", 34) + "\nGITHUB_TOKEN=" + g.token("ghp_", 36) + "\n")})
		case 2:
			wh = []string{"app/secrets/.wh..env"}
		case 4:
			fs = append(fs, file{"app/train.py", []byte("import os\nAPI_KEY = \"" + g.token("sk-", 48) + "\"\n")})
		}
		for _, f := range fs {
			total += int64(len(f.data))
		}
		p := filepath.Join(work, fmt.Sprintf("layer%02d.tar.gz", i))
		if err := writeLayer(p, fs, wh); err != nil {
			return err
		}
		l, err := tarball.LayerFromFile(p)
		if err != nil {
			return err
		}
		img, err = mutate.Append(img, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: fmt.Sprintf("RUN generate layer %d", i)}})
		if err != nil {
			return err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin", "CUDA_VERSION=12.4.1"}
	cf.Config.Cmd = []string{"python3", "/app/train.py"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	log.Printf("generated %d layers, %.0f MiB uncompressed, in %s", nlayers, float64(total)/(1<<20), time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := remote.Write(r, img); err != nil {
		return err
	}
	var csize int64
	ls, _ := img.Layers()
	for _, l := range ls {
		n, _ := l.Size()
		csize += n
	}
	log.Printf("pushed %s (%.0f MiB compressed) in %s", ref, float64(csize)/(1<<20), time.Since(start).Round(time.Millisecond))
	return nil
}

// gunzipAll is `crane blob … | gunzip > /dev/null` for every layer, in Go
// (stdlib gzip, as gunzip) and, apart, with klauspost's gzip (what mlwarden
// uses).
func gunzipAll(ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	img, err := remote.Image(r)
	if err != nil {
		return err
	}
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	for _, impl := range []string{"stdlib", "klauspost"} {
		start, cpu0 := time.Now(), cpuTime()
		var total int64
		for _, l := range ls {
			rc, err := l.Compressed()
			if err != nil {
				return err
			}
			var zr io.Reader
			if impl == "stdlib" {
				zr, err = gzip.NewReader(rc)
			} else {
				zr, err = kgzip.NewReader(rc)
			}
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, zr)
			rc.Close()
			if err != nil {
				return err
			}
			total += n
		}
		el := time.Since(start)
		log.Printf("%s gunzip of %d layers: %.0f MiB in %s wall, %s CPU (%.0f MiB/s, one layer at a time)", impl, len(ls), float64(total)/(1<<20), el.Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond), float64(total)/(1<<20)/el.Seconds())
	}
	return nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
