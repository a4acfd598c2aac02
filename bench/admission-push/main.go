//go:build !mlwarden_sbatch

// Command admission-push measures push-to-verdict time: a docker-registry
// (Debian's, started here on loopback with a notifications endpoint) tells
// an in-process `mlwarden serve` about a push of a ~200 MB image, and the
// server scans it with every built-in check. It prints the push time and the
// time from the manifest push to the verdict.
//
//	go run ./bench/admission-push [-mb 200]
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mlwarden/mlwarden/scanners/scan"
	"github.com/mlwarden/mlwarden/scanners/source/image"
	"github.com/mlwarden/mlwarden/server"
)

const token = "bench-events-token"

func main() {
	mb := flag.Int("mb", 200, "image size in MB (half site-packages-like files, half a safetensors model)")
	flag.Parse()
	if err := run(*mb); err != nil {
		fmt.Fprintln(os.Stderr, "admission-push:", err)
		os.Exit(1)
	}
}

func run(mb int) error {
	if mb <= 0 || mb > 4096 {
		return fmt.Errorf("-mb %d: 1 to 4096", mb)
	}
	dir, err := os.MkdirTemp("", "mlwarden-pushbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sc, err := scan.New(scan.Options{Image: image.Options{NoCache: true}})
	if err != nil {
		return err
	}
	cfg := server.DefaultConfig()
	cfg.Events.Token = token
	s, err := server.New(
		server.WithConfig(cfg),
		server.WithScanner(server.Pipeline{Scanner: sc}),
		server.WithRulesVersion(sc.RulesVersion()),
		server.WithLogger(slog.New(slog.NewJSONHandler(os.Stderr, nil))),
		server.WithAllowRegistries("127.0.0.1:*"), // the benchmark's registry is on loopback
	)
	if err != nil {
		return err
	}
	s.Start(ctx)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	reg, stop, err := startRegistry(dir, hs.URL+"/registry/events")
	if err != nil {
		return err
	}
	defer stop()

	img, err := benchImage(mb)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(reg + "/ml/bench:v1")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := remote.Write(tag, img); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	pushed := time.Now()
	dg, _ := img.Digest()
	ref := tag.Context().Digest(dg.String())
	for {
		v, err := s.Verdict(ctx, ref)
		if err == nil {
			done := time.Now()
			sum, _ := json.Marshal(v.Summary)
			fmt.Printf("image %d MB: push %s, manifest pushed to verdict %s, push start to verdict %s\n",
				mb, pushed.Sub(start).Round(time.Millisecond), done.Sub(pushed).Round(time.Millisecond), done.Sub(start).Round(time.Millisecond))
			fmt.Printf("verdict: %s, %d error(s)\n", sum, len(v.Errors))
			return nil
		}
		if time.Since(pushed) > 10*time.Minute {
			return fmt.Errorf("no verdict 10 minutes after the push")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// benchImage is two layers: site-packages-like files (small Python sources
// and 1 MiB binary blobs) and one safetensors model, random bytes so that
// nothing compresses away.
func benchImage(mb int) (v1.Image, error) {
	half := int64(mb) << 19
	files := layer(func(tw *tar.Writer, r *rand.ChaCha8) error {
		for i := int64(0); i*(1<<20) < half; i++ {
			d := fmt.Sprintf("opt/venv/lib/python3.12/site-packages/pkg%03d/", i)
			py := []byte(fmt.Sprintf("import os\n\ndef f%d():\n    return os.environ.get('HOME')\n", i))
			if err := put(tw, d+"__init__.py", py); err != nil {
				return err
			}
			blob := make([]byte, 1<<20)
			r.Read(blob)
			if err := put(tw, d+"_native.so", blob); err != nil {
				return err
			}
		}
		return nil
	})
	model := layer(func(tw *tar.Writer, r *rand.ChaCha8) error {
		n := half / 4 * 4
		hdr := []byte(fmt.Sprintf(`{"weight":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}`, n/4, n))
		for len(hdr)%8 != 0 {
			hdr = append(hdr, ' ')
		}
		var buf bytes.Buffer
		binary.Write(&buf, binary.LittleEndian, uint64(len(hdr)))
		buf.Write(hdr)
		data := make([]byte, n)
		r.Read(data)
		buf.Write(data)
		return put(tw, "models/model.safetensors", buf.Bytes())
	})
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: "amd64",
		Config: v1.Config{Env: []string{"PATH=/opt/venv/bin:/usr/bin"}, Cmd: []string{"python", "-m", "serve"}}})
	if err != nil {
		return nil, err
	}
	for i, l := range []func() (io.ReadCloser, error){files, model} {
		tl, err := tarball.LayerFromOpener(l)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		if img, err = mutate.AppendLayers(img, tl); err != nil {
			return nil, err
		}
	}
	return img, nil
}

// layer returns an opener that writes the same tar stream every time.
func layer(write func(*tar.Writer, *rand.ChaCha8) error) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			tw := tar.NewWriter(pw)
			err := write(tw, rand.NewChaCha8([32]byte{1}))
			if err == nil {
				err = tw.Close()
			}
			pw.CloseWithError(err)
		}()
		return pr, nil
	}
}

func put(tw *tar.Writer, p string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

func startRegistry(dir, notify string) (string, func(), error) {
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		return "", nil, fmt.Errorf("docker-registry (apt-get install docker-registry): %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := fmt.Sprintf(`version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: %s}}
http: {addr: %s}
notifications:
  endpoints:
    - name: mlwarden
      url: %s
      headers: {Authorization: [Bearer %s]}
      timeout: 2s
      threshold: 3
      backoff: 1s
      ignoredmediatypes: [application/octet-stream]
`, filepath.Join(dir, "data"), addr, notify, token)
	p := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "serve", p) // its log (404s on HEAD probes) is noise here
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return addr, stop, nil
		}
		if i > 300 {
			stop()
			return "", nil, fmt.Errorf("registry did not start: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
