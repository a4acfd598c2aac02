//go:build !mlwarden_sbatch

// Command admission measures `mlwarden serve`'s admission latency with a
// warm verdict store, on loopback only.
//
//	go run ./bench/admission -rate 200 -duration 60s
//
// It starts itself a second time as the server (-mode serve: HTTPS with a
// self-signed certificate, a bbolt store warmed with verdicts for -images
// digests, JSON logs written to /dev/null as a deployment writes them), then
// sends Deployment AdmissionReviews (one init container and two containers,
// all pinned by digest) at a fixed rate, open loop: each request's latency
// counts from when it was due, so a stalled server is not hidden by a
// stalled client. It prints p50/p90/p99/max and the server's
// mlwarden_admission_duration_seconds histogram.
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/server"
	"github.com/mlwarden/mlwarden/server/verdict"
)

const (
	maxRequests = 200_000
	maxDuration = 10 * time.Minute
)

func main() {
	mode := flag.String("mode", "run", "run (start a server and load it), serve, or load")
	target := flag.String("url", "", "admission URL to load (-mode load); loopback only")
	rate := flag.Int("rate", 200, "requests per second")
	dur := flag.Duration("duration", 60*time.Second, "how long to send")
	images := flag.Int("images", 500, "distinct image digests with verdicts in the store")
	dir := flag.String("dir", "", "work directory (default: a temporary one)")
	flag.Parse()
	var err error
	switch *mode {
	case "serve":
		err = serve(*dir, *images)
	case "load":
		err = load(*target, *rate, *dur, *images)
	case "run":
		err = run(*rate, *dur, *images, *dir)
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "admission bench:", err)
		os.Exit(1)
	}
}

// imageRef is the i-th benchmark image: a fixed digest so that the server
// and the client agree without talking.
func imageRef(i int) name.Digest {
	sum := sha256.Sum256([]byte(fmt.Sprintf("mlwarden-bench-image-%d", i)))
	d, err := name.NewDigest(fmt.Sprintf("registry.bench.invalid/ml/img%d@sha256:%s", i%17, hex.EncodeToString(sum[:])))
	if err != nil {
		panic(err)
	}
	return d
}

const rulesVersion = "v1-bench"

// noScanner fails: with a warm store the server must never scan.
type noScanner struct{}

func (noScanner) ScanImage(context.Context, server.ScanRequest) (*scanners.Result, error) {
	return nil, errors.New("bench: the store should have had this verdict")
}

func serve(dir string, images int) error {
	if dir == "" {
		return errors.New("-dir is required with -mode serve")
	}
	store, err := verdict.OpenBolt(filepath.Join(dir, "verdicts.db"))
	if err != nil {
		return err
	}
	defer store.Close()
	ctx := context.Background()
	for i := range images {
		ref := imageRef(i)
		res := &scanners.Result{}
		if i%10 == 9 { // one image in ten has a finding below fail-on
			res.Findings = []scanners.Finding{{RuleID: "pins/image-not-digest", Check: "pins",
				Severity: scanners.SeverityMedium, Message: "bench finding", Path: "/app/Dockerfile", Line: 1}}
		}
		if err := store.Put(ctx, ref, verdict.FromResult(ref, rulesVersion, res, time.Now())); err != nil {
			return err
		}
	}
	certFile, keyFile, err := selfSigned(dir)
	if err != nil {
		return err
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	s, err := server.New(
		server.WithStore(store),
		server.WithScanner(noScanner{}),
		server.WithRulesVersion(rulesVersion),
		server.WithLogger(slog.New(slog.NewJSONHandler(devnull, nil))),
	)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return s.Run(ctx, server.ListenConfig{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile},
		func(a net.Addr) { fmt.Printf("listening %s\n", a) })
}

func selfSigned(dir string) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	cf, kf := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	return cf, kf, os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}

func run(rate int, dur time.Duration, images int, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "mlwarden-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-mode", "serve", "-dir", dir, "-images", fmt.Sprint(images))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("server did not start: %w", err)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return load("https://"+addr+"/admission", rate, dur, images)
}

func review(uid string, imgs [3]name.Digest) []byte {
	tmpl := map[string]any{
		"metadata": map[string]any{"labels": map[string]string{"app": "train"}},
		"spec": map[string]any{
			"initContainers": []map[string]any{{"name": "fetch", "image": imgs[0].String()}},
			"containers": []map[string]any{
				{"name": "trainer", "image": imgs[1].String(), "resources": map[string]any{"limits": map[string]string{"nvidia.com/gpu": "1"}}},
				{"name": "sidecar", "image": imgs[2].String()},
			},
		},
	}
	obj := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "train", "namespace": "ml"},
		"spec":     map[string]any{"replicas": 2, "selector": map[string]any{"matchLabels": map[string]string{"app": "train"}}, "template": tmpl}}
	gvk := map[string]string{"group": "apps", "version": "v1", "kind": "Deployment"}
	b, _ := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{"uid": uid, "kind": gvk, "requestKind": gvk,
			"resource":  map[string]string{"group": "apps", "version": "v1", "resource": "deployments"},
			"namespace": "ml", "name": "train", "operation": "CREATE", "object": obj, "dryRun": false,
			"userInfo": map[string]any{"username": "bench"}}})
	return b
}

func load(target string, rate int, dur time.Duration, images int) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to load %s: loopback addresses only", u.Host)
	}
	if rate <= 0 || dur <= 0 || dur > maxDuration || int(float64(rate)*dur.Seconds()) > maxRequests {
		return fmt.Errorf("rate %d for %s is outside the bounds (at most %d requests, %s)", rate, dur, maxRequests, maxDuration)
	}
	client := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, // our own self-signed loopback server
			MaxIdleConnsPerHost: 256,
		},
	}
	n := int(float64(rate) * dur.Seconds())
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = review(fmt.Sprintf("bench-%d", i), [3]name.Digest{imageRef(3 * i % images), imageRef((3*i + 1) % images), imageRef((3*i + 2) % images)})
	}
	// Warm the connection pool and the server.
	for i := range 50 {
		if _, err := post(client, target, bodies[i%len(bodies)]); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	var errs, denied int
	var firstErr error
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		wg.Add(1)
		go func() {
			defer wg.Done()
			allowed, err := post(client, target, bodies[i%len(bodies)])
			lat[i] = time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs++
				if firstErr == nil {
					firstErr = err
				}
			case !allowed:
				denied++
			}
		}()
	}
	wg.Wait()
	total := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Printf("requests %d in %s (%.1f/s), errors %d, denied %d\n", n, total.Round(time.Millisecond), float64(n)/total.Seconds(), errs, denied)
	fmt.Printf("latency p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
		pct(0.50).Round(time.Microsecond), pct(0.90).Round(time.Microsecond), pct(0.99).Round(time.Microsecond),
		pct(0.999).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	if firstErr != nil {
		fmt.Printf("first error: %v\n", firstErr)
	}
	// The server's own view, from /metrics.
	mu2 := strings.Replace(target, "/admission", "/metrics", 1)
	if resp, err := client.Get(mu2); err == nil {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, "mlwarden_admission_duration_seconds") || strings.HasPrefix(l, "mlwarden_verdict_lookups_total") {
				fmt.Println("  server:", l)
			}
		}
		resp.Body.Close()
	}
	if errs > 0 {
		return fmt.Errorf("%d requests failed", errs)
	}
	return nil
}

func post(c *http.Client, target string, body []byte) (bool, error) {
	resp, err := c.Post(target, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
	}
	var rev struct {
		Response struct {
			Allowed bool `json:"allowed"`
		} `json:"response"`
	}
	if err := json.Unmarshal(data, &rev); err != nil {
		return false, err
	}
	return rev.Response.Allowed, nil
}
