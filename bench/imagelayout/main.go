// Command imagelayout writes the OCI image layout of issue 21's image
// benchmark and measures plain decompression of its layers.
//
//	go run ./bench/imagelayout -out DIR [-tree 200] [-weights 400] [-seed 1]
//	go run ./bench/imagelayout -decompress DIR
//	go run ./bench/imagelayout -out DIR -from SRC   # one layer of SRC's files
//
// -compression zstd writes zstd layers instead. -from writes, instead of the
// generated image, one gzip layer of the files under SRC (as tar -C
// dirname(SRC) basename(SRC) would): issue 21's real content, Debian's
// Python packages, as an image.
//
// Layer 1 is an ML tree: about a third text (Python code, YAML and JSON
// configs, training logs, notebooks with base64 PNG outputs) with 64 fake
// credentials planted in it, the rest weights (safetensors, NumPy, a PyTorch
// zip with a harmless pickle). Layer 2 is one large safetensors file, and a
// whiteout that deletes a config of layer 1. Weights are float32 drawn from a
// normal distribution, which gzip shrinks by a few per cent as it does real
// weights. Layers are gzip (level 6, as docker and buildkit write them).
// Everything is generated from -seed; nothing is downloaded, and no
// credential is format-valid beyond its shape.
//
// -decompress gunzips every layer blob of the layout's image one after the
// other to nowhere, with the Go standard library and with klauspost's gzip,
// and prints the wall time of each (bench/image-layout.sh also times GNU
// gunzip itself).
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	out := flag.String("out", "", "write the OCI image layout to this directory")
	decompress := flag.String("decompress", "", "gunzip every layer blob of this layout's image, one after the other; print the time")
	tree := flag.Int("tree", 200, "MiB of the ML tree layer (a third of it text)")
	weights := flag.Int("weights", 400, "MiB of the weights layer")
	seed := flag.Uint64("seed", 1, "seed of everything generated")
	list := flag.String("blobs", "", "print the layer blob files of this layout's image, bottom first")
	dir := flag.String("dir", "", "write the ML tree layer's files (the same as -out's, for -tree and -seed) to this directory, and the paths of the files with a planted credential to DIR.manifest")
	comp := flag.String("compression", "gzip", "gzip or zstd")
	from := flag.String("from", "", "with -out: one gzip layer of this directory's files instead of the generated image")
	flag.Parse()
	log.SetFlags(0)
	switch {
	case *out != "" && *from != "":
		if err := buildFrom(*out, *from); err != nil {
			log.Fatal(err)
		}
	case *out != "":
		if err := build(*out, *tree, *weights, *seed, *comp); err != nil {
			log.Fatal(err)
		}
	case *dir != "":
		if err := writeTree(*dir, *tree, *seed); err != nil {
			log.Fatal(err)
		}
	case *decompress != "":
		if err := gunzipAll(*decompress); err != nil {
			log.Fatal(err)
		}
	case *list != "":
		ps, err := blobs(*list)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(strings.Join(ps, "\n"))
	default:
		flag.Usage()
		os.Exit(2)
	}
}

type gen struct{ r *rand.Rand }

var words = strings.Fields(`import from def class return self if else elif for in while try except
finally with as lambda yield None True False model tensor torch numpy np data loader batch size
epoch optimizer learning_rate loss forward backward config path os sys json yaml logging logger
train eval checkpoint state_dict cuda device float32 shape layer weight bias hidden dropout
attention head token tokenizer vocab embedding sequence length mask input output result value key`)

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func (g *gen) pick(chars string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[g.r.IntN(len(chars))]
	}
	return string(b)
}

// secret is one planted credential line, in the formats of
// rules/secrets.toml; made from the seed at run time.
func (g *gen) secret(i int) string {
	hex := "0123456789abcdef"
	switch i % 8 {
	case 0:
		return "export HF_TOKEN=hf_" + g.pick(alnum[:52], 34)
	case 1:
		return "WANDB_API_KEY=" + g.pick(hex, 40)
	case 2:
		return "NVIDIA_API_KEY = \"nvapi-" + g.pick(alnum+"_-", 64) + "\""
	case 3:
		return "client = OpenAI(api_key=\"sk-proj-" + g.pick(alnum, 74) + "T3BlbkFJ" + g.pick(alnum, 74) + "\")"
	case 4:
		return "ANTHROPIC_API_KEY = \"sk-ant-api03-" + g.pick(alnum, 93) + "AA\""
	case 5:
		return "export AWS_ACCESS_KEY_ID=AKIA" + g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	case 6:
		return "token = \"dapi" + g.pick(hex, 32) + "\""
	default:
		return "GITHUB_TOKEN: ghp_" + g.pick(alnum, 36)
	}
}

// code is n bytes of Python-like lines.
func (g *gen) code(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 128)
	for b.Len() < n {
		b.WriteString(strings.Repeat(" ", g.r.IntN(3)*4))
		k := 3 + g.r.IntN(9)
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[g.r.IntN(len(words))])
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
	return b.Bytes()
}

func (g *gen) config(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s_%d: %g\n", words[g.r.IntN(len(words))], i, g.r.Float64())
	}
	return b.Bytes()
}

func (g *gen) logText(n int) []byte {
	var b bytes.Buffer
	t := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for step := 0; b.Len() < n; step++ {
		t = t.Add(time.Duration(g.r.IntN(3000)) * time.Millisecond)
		fmt.Fprintf(&b, "%s INFO step=%d loss=%.5f lr=%.2e grad_norm=%.4f tokens/s=%d\n", t.Format(time.RFC3339Nano), step, 4*math.Exp(-float64(step)/5e4)+g.r.Float64()/10, 3e-4*g.r.Float64(), g.r.Float64()*3, 2000+g.r.IntN(9000))
	}
	return b.Bytes()
}

// notebook is a Jupyter notebook of about n bytes: code cells and PNG
// outputs (random bytes behind a PNG header, base64).
func (g *gen) notebook(n int, extra string) []byte {
	type cell map[string]any
	var cells []cell
	size := 0
	for size < n {
		src := string(g.code(1 << 10))
		if extra != "" {
			src, extra = extra+"\n"+src, ""
		}
		png := append([]byte("\x89PNG\r\n\x1a\n"), g.floats(8<<10+g.r.IntN(24<<10))...)
		enc := base64.StdEncoding.EncodeToString(png)
		cells = append(cells, cell{"cell_type": "code", "source": strings.SplitAfter(src, "\n"),
			"outputs": []any{map[string]any{"output_type": "display_data", "data": map[string]any{"image/png": enc}}}})
		size += len(src) + len(enc)
	}
	b, _ := json.MarshalIndent(map[string]any{"cells": cells, "nbformat": 4, "nbformat_minor": 5}, "", " ")
	return b
}

// floats is n bytes of little-endian float32 weights, N(0, 0.02).
func (g *gen) floats(n int) []byte {
	b := make([]byte, n&^3)
	for i := 0; i < len(b); i += 4 {
		binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(g.r.NormFloat64()*0.02)))
	}
	return b
}

func (g *gen) safetensors(n int) []byte {
	data := g.floats(n)
	hdr, _ := json.Marshal(map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"model.weight": map[string]any{"dtype": "F32", "shape": []int{len(data) / 4}, "data_offsets": []int{0, len(data)}},
	})
	b := make([]byte, 8, 8+len(hdr)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	return append(append(b, hdr...), data...)
}

func (g *gen) npy(n int) []byte {
	data := g.floats(n)
	hdr := "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (" + fmt.Sprint(len(data)/4) + ",), }"
	hdr += strings.Repeat(" ", 127-len(hdr)) + "\n"
	return append([]byte(hdr), data...)
}

// torchZip is a PyTorch zip checkpoint whose pickle is a harmless dict of
// plain values (no globals), and n bytes of storage.
func (g *gen) torchZip(n int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
	w.Write([]byte("\x80\x02}q\x00(X\x05\x00\x00\x00epochq\x01K\x03X\x04\x00\x00\x00lossq\x02G?\xb9\x99\x99\x99\x99\x99\x9au."))
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "archive/version", Method: zip.Store})
	w.Write([]byte("3\n"))
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "archive/data/0", Method: zip.Store})
	w.Write(g.floats(n))
	zw.Close()
	return b.Bytes()
}

type file struct {
	name    string
	data    []byte
	planted bool // holds one of the fake credentials
}

// treeFiles is layer 1: about a third text (64 planted credentials), the rest
// weights.
func (g *gen) treeFiles(mib int) []file {
	var fs []file
	text := mib << 20 * 35 / 100
	secrets := 0
	plant := func(i int) string {
		if secrets >= 64 || i%7 != 3 {
			return ""
		}
		secrets++
		return g.secret(secrets)
	}
	used := 0
	for i := 0; used < text; i++ {
		var name string
		var data []byte
		extra := plant(i)
		planted := extra != ""
		switch i % 10 {
		case 0, 1, 2, 3, 4, 5:
			name, data = fmt.Sprintf("workspace/src/pkg%02d/mod%04d.py", i%40, i), g.code(4<<10+g.r.IntN(60<<10))
		case 6:
			name, data = fmt.Sprintf("workspace/configs/exp%04d.yaml", i), g.config(1<<10+g.r.IntN(8<<10))
		case 7:
			name, data = fmt.Sprintf("workspace/logs/run%04d.log", i), g.logText(64<<10+g.r.IntN(256<<10))
		case 8:
			name, data = fmt.Sprintf("workspace/notebooks/nb%04d.ipynb", i), g.notebook(64<<10+g.r.IntN(256<<10), extra)
			extra = ""
		default:
			name, data = fmt.Sprintf("workspace/configs/run%04d.json", i), []byte(fmt.Sprintf(`{"lr": %g, "batch_size": %d, "model": "llama-%d"}`+"\n", g.r.Float64(), 1+g.r.IntN(512), i))
		}
		if extra != "" {
			data = append([]byte(extra+"\n"), data...)
		}
		fs = append(fs, file{name, data, planted})
		used += len(data)
	}
	fs = append(fs, file{"workspace/configs/deploy.env", []byte(g.secret(0) + "\n"), true})
	weights := mib<<20 - used
	for n := 0; weights > 0; n++ {
		var name string
		var data []byte
		switch n % 3 {
		case 0:
			name, data = fmt.Sprintf("workspace/checkpoints/step%d/model.safetensors", n), g.safetensors(min(weights, 16<<20+g.r.IntN(24<<20)))
		case 1:
			name, data = fmt.Sprintf("workspace/checkpoints/step%d/emb.npy", n), g.npy(min(weights, 1<<20+g.r.IntN(8<<20)))
		default:
			name, data = fmt.Sprintf("workspace/checkpoints/step%d/optimizer.pt", n), g.torchZip(min(weights, 4<<20+g.r.IntN(12<<20)))
		}
		fs = append(fs, file{name, data, false})
		weights -= len(data)
	}
	return fs
}

// writeTree writes the ML tree layer's files under dir, as build makes
// them for the same size and seed, and dir.manifest.
func writeTree(dir string, treeMiB int, seed uint64) error {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed+1))}
	var planted []string
	for _, f := range g.treeFiles(treeMiB) {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return err
		}
		if f.planted {
			planted = append(planted, f.name)
		}
	}
	return os.WriteFile(dir+".manifest", []byte(strings.Join(planted, "\n")+"\n"), 0o644)
}

// writeLayer writes a gzip (level 6) or zstd (default level) tar blob.
func writeLayer(path, comp string, fs []file, whiteouts []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var zw io.WriteCloser
	switch comp {
	case "gzip":
		zw, _ = kgzip.NewWriterLevel(f, 6)
	case "zstd":
		if zw, err = zstd.NewWriter(f); err != nil {
			return err
		}
	default:
		return fmt.Errorf("compression %q: gzip or zstd", comp)
	}
	tw := tar.NewWriter(zw)
	mt := time.Unix(1700000000, 0)
	for _, w := range whiteouts {
		if err := tw.WriteHeader(&tar.Header{Name: w, Typeflag: tar.TypeReg, Mode: 0o644, ModTime: mt}); err != nil {
			return err
		}
	}
	dirs := map[string]bool{}
	for _, fl := range fs {
		for d := filepath.Dir(fl.name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
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

func build(out string, treeMiB, weightsMiB int, seed uint64, comp string) error {
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "mlwarden-imagelayout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	g := &gen{r: rand.New(rand.NewPCG(seed, seed+1))}
	start := time.Now()
	layers := []struct {
		files     []file
		whiteouts []string
		createdBy string
	}{
		{g.treeFiles(treeMiB), nil, "COPY workspace /workspace"},
		{[]file{{"workspace/weights/model-00001-of-00001.safetensors", g.safetensors(weightsMiB << 20), false}}, []string{"workspace/configs/.wh.deploy.env"}, "RUN download-weights"},
	}
	img := empty.Image
	var raw int64
	for i, l := range layers {
		for _, f := range l.files {
			raw += int64(len(f.data))
		}
		p := filepath.Join(work, fmt.Sprintf("layer%d.tar.%s", i, comp))
		if err := writeLayer(p, comp, l.files, l.whiteouts); err != nil {
			return err
		}
		layers[i].files = nil
		opts := []tarball.LayerOption{}
		if comp == "zstd" {
			opts = append(opts, tarball.WithMediaType(types.OCILayerZStd))
		}
		tl, err := tarball.LayerFromFile(p, opts...)
		if err != nil {
			return err
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: tl, History: v1.History{CreatedBy: l.createdBy}}); err != nil {
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
	cf.Config.Cmd = []string{"python3", "/workspace/src/train.py"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := writeLayout(out, img); err != nil {
		return err
	}
	var csize int64
	ls, _ := img.Layers()
	for _, l := range ls {
		n, _ := l.Size()
		csize += n
	}
	log.Printf("wrote %s: %d layers, %.0f MiB uncompressed, %.0f MiB %s, in %s", out, len(ls), float64(raw)/(1<<20), float64(csize)/(1<<20), comp, time.Since(start).Round(time.Millisecond))
	return nil
}

// blobs lists the layer blob files of the layout's only image, bottom first
// (bench/image-layout.sh pipes them through gunzip).
func blobs(dir string) ([]string, error) {
	lp, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s: want one image, have %d", dir, len(m.Manifests))
	}
	img, err := lp.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	ls, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.Join(dir, "blobs", d.Algorithm, d.Hex))
	}
	return out, nil
}

func gunzipAll(dir string) error {
	ps, err := blobs(dir)
	if err != nil {
		return err
	}
	for _, impl := range []string{"stdlib", "klauspost"} {
		start := time.Now()
		var total int64
		for _, p := range ps {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			var zr io.Reader
			if impl == "stdlib" {
				zr, err = gzip.NewReader(f)
			} else {
				zr, err = kgzip.NewReader(f)
			}
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, zr)
			f.Close()
			if err != nil {
				return err
			}
			total += n
		}
		el := time.Since(start)
		fmt.Printf("%s gunzip of %d layers: %.0f MiB in %.2f s (%.0f MiB/s, one layer at a time)\n", impl, len(ps), float64(total)/(1<<20), el.Seconds(), float64(total)/(1<<20)/el.Seconds())
	}
	return nil
}

// buildFrom writes to out an image of one gzip layer holding the files under
// src, named from src's base name down; symbolic links are kept as links,
// other special files left out.
func buildFrom(out, src string) error {
	start := time.Now()
	src = filepath.Clean(src)
	work, err := os.MkdirTemp("", "imagelayout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	p := filepath.Join(work, "layer.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(f, 6)
	tw := tar.NewWriter(zw)
	root := filepath.Dir(src)
	err = filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 {
			return nil
		}
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		r, err := os.Open(path)
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(tw, r)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("layer of %s: %w", src, err)
	}
	l, err := tarball.LayerFromFile(p)
	if err != nil {
		return err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: "COPY " + filepath.Base(src) + " /" + filepath.Base(src)}})
	if err != nil {
		return err
	}
	if err := writeLayout(out, img); err != nil {
		return err
	}
	n, _ := l.Size()
	log.Printf("wrote %s: 1 layer of %s, %.0f MiB gzip, in %s", out, src, float64(n)/(1<<20), time.Since(start).Round(time.Millisecond))
	return nil
}

// writeLayout writes an OCI image layout at out holding img.
func writeLayout(out string, img v1.Image) error {
	lp, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	return lp.AppendImage(img)
}
