// Command poison pushes the images of the layer-cache poisoning case to a
// registry, for bench/hostile/sources.sh: REGISTRY/hostile/real:1, whose
// one layer holds a fake token (made from a seed), and
// REGISTRY/hostile/decoy:1, a harmless layer whose config claims the real
// layer's diff ID. It prints the two references, then pushes
// REGISTRY/hostile/layers:1, three layers with a fake token each, and
// prints it and the middle layer's blob digest (for a fault on that blob).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func layer(path, body string) v1.Layer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: path, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write([]byte(body))
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		log.Fatal(err)
	}
	return l
}

func main() {
	reg := flag.String("registry", "", "registry host:port")
	flag.Parse()
	r := rand.New(rand.NewPCG(15, 16))
	tok := []byte("hf_")
	for range 34 {
		tok = append(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[r.IntN(52)])
	}
	evil := layer("app/.env", "HF_TOKEN="+string(tok)+"\n")
	harmless := layer("app/readme.txt", "nothing to see\n")
	real, err := mutate.AppendLayers(empty.Image, evil)
	if err != nil {
		log.Fatal(err)
	}
	decoy, err := mutate.AppendLayers(empty.Image, harmless)
	if err != nil {
		log.Fatal(err)
	}
	cf, _ := decoy.ConfigFile()
	cf = cf.DeepCopy()
	d, _ := evil.DiffID()
	cf.RootFS.DiffIDs = []v1.Hash{d}
	if decoy, err = mutate.ConfigFile(decoy, cf); err != nil {
		log.Fatal(err)
	}
	for _, x := range []struct {
		ref string
		img v1.Image
	}{{*reg + "/hostile/real:1", real}, {*reg + "/hostile/decoy:1", decoy}} {
		ref, err := name.ParseReference(x.ref)
		if err != nil {
			log.Fatal(err)
		}
		if err := remote.Write(ref, x.img); err != nil {
			log.Fatal(err)
		}
		fmt.Println(x.ref)
	}
	var ls []v1.Layer
	for i := range 3 {
		body := fmt.Sprintf("HF_TOKEN=%s%c\n", tok[:len(tok)-1], 'a'+i)
		noise := make([]byte, 256<<10) // incompressible: a stall's first bytes are not the whole blob
		for j := range noise {
			noise[j] = byte(r.Uint32())
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, f := range []struct{ p, b string }{{fmt.Sprintf("l%d/.env", i), body}, {fmt.Sprintf("l%d/noise.bin", i), string(noise)}} {
			tw.WriteHeader(&tar.Header{Name: f.p, Mode: 0o644, Size: int64(len(f.b)), Typeflag: tar.TypeReg})
			tw.Write([]byte(f.b))
		}
		tw.Close()
		data := buf.Bytes()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		if err != nil {
			log.Fatal(err)
		}
		ls = append(ls, l)
	}
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		log.Fatal(err)
	}
	ref, _ := name.ParseReference(*reg + "/hostile/layers:1")
	if err := remote.Write(ref, img); err != nil {
		log.Fatal(err)
	}
	d2, _ := ls[1].Digest()
	fmt.Println(ref.String())
	fmt.Println(d2.String())
}
