//go:build !mlwarden_sbatch

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mlwarden/mlwarden/internal/faultproxy"
	"github.com/mlwarden/mlwarden/server"
)

// reviewFor is a Pod review whose one container runs image.
func reviewFor(t *testing.T, uid, image string) []byte {
	obj := podObject(t, func(p *corev1.Pod) { p.Spec.Containers[0].Image = image })
	return reviewJSON(t, uid, "Pod", "", "pods", "CREATE", "ml", obj, false)
}

// TestAdmissionStallingRegistrySlots: two Pods whose images sit on a
// registry that never answers take both inline-scan slots; a third Pod
// whose image has four high findings must still be scanned and denied. The
// slots are held for one scan deadline at most, and what could not be
// scanned is denied (the fail-closed default), never admitted.
func TestAdmissionStallingRegistrySlots(t *testing.T) {
	reg := startRegistry(t, "", "")
	files := map[string]string{}
	for i := range 4 {
		files[fmt.Sprintf("app/%d.env", i)] = "TOKEN=" + badMarker + "\n"
	}
	bad := pushImage(t, reg, "ml/bad4", "v1", files)
	stuck1 := pushImage(t, reg, "ml/stuck1", "v1", map[string]string{"a": "1"})
	stuck2 := pushImage(t, reg, "ml/stuck2", "v1", map[string]string{"a": "2"})
	p := faultproxy.New(reg)
	defer p.Close()
	p.Set(faultproxy.Fault{Kind: faultproxy.Hang, Path: regexp.MustCompile(`/ml/stuck`)})
	via := func(d fmt.Stringer) string { return strings.Replace(d.String(), reg, p.Host, 1) }

	cfg, err := server.ParseConfig([]byte("scan-deadline: 700ms\nretries: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, hs := startServer(t, server.WithScanner(newCounting()), server.WithConfig(cfg))
	var wg sync.WaitGroup
	for i, d := range []string{via(stuck1), via(stuck2)} {
		wg.Go(func() {
			start := time.Now()
			r := admit(t, hs.URL, reviewFor(t, fmt.Sprintf("stuck-%d", i), d))
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("stuck image %d: answered after %s, deadline 700ms", i, el)
			}
			if r.Allowed {
				t.Errorf("an image that could not be scanned was admitted: %q %q", message(r), r.Warnings)
			}
		})
	}
	wg.Wait()
	start := time.Now()
	r := admit(t, hs.URL, reviewFor(t, "bad", via(bad)))
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("answered after %s", el)
	}
	if r.Allowed {
		t.Fatalf("an image with four high findings was admitted while the slots were held: %q %q", message(r), r.Warnings)
	}
	if !strings.Contains(message(r), "4 finding(s)") {
		t.Errorf("the image was not scanned (slots still held?): %q", message(r))
	}
}

// TestAdmissionFallbackDefault: the documented default for "could not
// scan" is deny; warn is what a site chooses.
func TestAdmissionFallbackDefault(t *testing.T) {
	if got := server.DefaultConfig().Fallback; got != server.Deny {
		t.Fatalf("default fallback %q, want deny", got)
	}
}

// serveReal runs the server as serve does (Run: the real http.Server with
// its timeouts and limits) on a loopback port, and returns its base URL.
func serveReal(t *testing.T, opts ...server.Option) string {
	t.Helper()
	s, err := server.New(append([]server.Option{server.WithLogger(slog.New(slog.DiscardHandler)), server.WithAllowRegistries(loopbackRegistries...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, server.ListenConfig{Addr: "127.0.0.1:0"}, func(a net.Addr) { addr <- a }) }()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the server did not shut down")
		}
	})
	return base
}

// alive checks that /healthz and /metrics answer quickly.
func alive(t *testing.T, base string) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	for _, p := range []string{"/healthz", "/metrics"} {
		resp, err := c.Get(base + p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: HTTP %d", p, resp.StatusCode)
		}
	}
}

// TestServerAbuse: malformed and oversized requests, deep nesting, slow
// clients and a header bomb are refused quickly, and the server keeps
// answering /healthz and /metrics throughout.
func TestServerAbuse(t *testing.T) {
	base := serveReal(t)
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(body io.Reader) (int, error) {
		resp, err := client.Post(base+"/admission", "application/json", body)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	t.Run("malformed AdmissionReview", func(t *testing.T) {
		deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
		for _, body := range []string{
			"", "{", "null", "[]", `"x"`, "\xff\xfe\x00",
			`{"kind":"AdmissionReview"}`,
			`{"request":null}`,
			`{"request":{"uid":1}}`,
			`{"request":{"operation":"CREATE","kind":{"kind":"Pod"},"object":{"spec":{"containers":"no"}}}}`,
			`{"request":{"operation":"CREATE","kind":{"kind":"Pod"},"object":` + deep + `}}`,
			`{"request":{"operation":"CREATE","kind":{"kind":"Pod"},"object":{"spec":` + strings.Repeat(`{"a":`, 100000) + `1` + strings.Repeat("}", 100000) + `}}}`,
			`{"request":{"operation":"CREATE","kind":{"kind":"Deployment"},"object":{"spec":{"template":{"spec":{"containers":[{"image":"` + strings.Repeat("a", 1<<20) + `"}]}}}}}}`,
		} {
			start := time.Now()
			code, err := post(strings.NewReader(body))
			if err != nil {
				t.Errorf("%.40q: %v", body, err)
				continue
			}
			if code != http.StatusBadRequest && code != http.StatusOK {
				t.Errorf("%.40q: HTTP %d, want 400 (or an answer)", body, code)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("%.40q: %s", body, el)
			}
		}
		alive(t, base)
	})

	t.Run("100 MB body", func(t *testing.T) {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		code, err := post(io.LimitReader(zeros{}, 100<<20))
		// The server answers 413 after 4 MiB and may close the
		// connection while the client still sends: either is a refusal.
		if err == nil && code != http.StatusRequestEntityTooLarge {
			t.Errorf("HTTP %d, want 413", code)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("took %s", el)
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if grown := int64(after.HeapInuse) - int64(before.HeapInuse); grown > 64<<20 {
			t.Errorf("the heap grew by %d MiB", grown>>20)
		}
		alive(t, base)
	})

	t.Run("header bomb", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, base+"/admission", strings.NewReader("{}"))
		req.Header.Set("X-Bomb", strings.Repeat("x", 128<<10)) // over the 64 KiB bound, under the 1 MiB default
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Errorf("HTTP %d, want 431", resp.StatusCode)
			}
		}
		alive(t, base)
	})

	t.Run("slow clients", func(t *testing.T) {
		host := strings.TrimPrefix(base, "http://")
		var conns []net.Conn
		for range 200 {
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			// Half a request line, then nothing: slowloris.
			fmt.Fprintf(c, "POST /admission HTTP/1.1\r\nHost: x\r\nX-Slow: ")
			conns = append(conns, c)
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		start := time.Now()
		alive(t, base)
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("healthz and metrics took %s with 200 slow clients", el)
		}
		if testing.Short() {
			return
		}
		// Past the header timeout (5 s) the server has closed them.
		time.Sleep(6 * time.Second)
		open := 0
		for _, c := range conns {
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := bufio.NewReader(c).ReadByte(); err != nil && isTimeout(err) {
				open++
			}
		}
		if open > 0 {
			t.Errorf("%d of 200 slow clients still hold a connection after the header timeout", open)
		}
	})
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestAdmissionLoadMisbehavingRegistry: admission reviews at 100/s, each
// for an image of its own on a registry that never answers, with
// /healthz and /metrics asked all along. Every review is answered within
// the deadline, as the fallback says (deny: fail closed; warn: fail
// open); the server stays up and holds no goroutines afterwards.
func TestAdmissionLoadMisbehavingRegistry(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 300
	}
	reg := startRegistry(t, "", "")
	p := faultproxy.New(reg)
	defer p.Close()
	p.Set(faultproxy.Fault{Kind: faultproxy.Hang, Path: regexp.MustCompile(`/manifests/`)},
		faultproxy.Fault{Kind: faultproxy.Drip, Path: regexp.MustCompile(`/blobs/`), Interval: time.Second})
	for _, c := range []struct {
		fallback string
		allowed  bool
	}{{"deny", false}, {"warn", true}} {
		t.Run("fallback "+c.fallback, func(t *testing.T) {
			n := n
			if c.fallback == "warn" {
				if testing.Short() {
					t.Skip("one fallback is enough with -short")
				}
				n = 300 // the long run is the fail-closed one
			}
			before := runtime.NumGoroutine()
			cfg, err := server.ParseConfig([]byte("scan-deadline: 1s\nretries: 0\nqueue-size: 16\nfallback: " + c.fallback + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			base := serveReal(t, server.WithScanner(newCounting()), server.WithConfig(cfg), server.WithScanTimeout(3*time.Second))
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 200}}
			var wrong, late, failed atomic.Int64
			var slowest atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var probesBad atomic.Int64
			wg.Go(func() {
				pc := &http.Client{Timeout: 2 * time.Second}
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					for _, path := range []string{"/healthz", "/metrics"} {
						resp, err := pc.Get(base + path)
						if err != nil || resp.StatusCode != http.StatusOK {
							probesBad.Add(1)
						}
						if resp != nil {
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					}
				}
			})
			tick := time.NewTicker(10 * time.Millisecond) // 100/s, open loop
			for i := range n {
				<-tick.C
				img := fmt.Sprintf("%s/ml/load@sha256:%016x%016x%016x%016x", p.Host, rand.Uint64(), rand.Uint64(), rand.Uint64(), uint64(i))
				body := reviewFor(t, fmt.Sprintf("load-%d", i), img)
				wg.Go(func() {
					start := time.Now()
					resp, err := client.Post(base+"/admission", "application/json", bytes.NewReader(body))
					el := time.Since(start)
					for {
						old := slowest.Load()
						if int64(el) <= old || slowest.CompareAndSwap(old, int64(el)) {
							break
						}
					}
					if err != nil {
						failed.Add(1)
						return
					}
					defer resp.Body.Close()
					var rev admissionv1.AdmissionReview
					if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&rev) != nil || rev.Response == nil {
						failed.Add(1)
						return
					}
					if rev.Response.Allowed != c.allowed {
						wrong.Add(1)
					}
					if el > 3*time.Second { // deadline 1 s, on a shared 2-core machine
						late.Add(1)
					}
				})
			}
			tick.Stop()
			time.Sleep(2 * time.Second)
			close(stop)
			wg.Wait()
			t.Logf("%d reviews at 100/s: slowest %s, %d failed, %d late, %d wrong, %d bad probes",
				n, time.Duration(slowest.Load()).Round(time.Millisecond), failed.Load(), late.Load(), wrong.Load(), probesBad.Load())
			if failed.Load() > 0 || late.Load() > 0 || wrong.Load() > 0 || probesBad.Load() > 0 {
				t.Errorf("%d failed, %d answered after 3s, %d not %s, %d health or metrics probes failed",
					failed.Load(), late.Load(), wrong.Load(), map[bool]string{true: "allowed", false: "denied"}[c.allowed], probesBad.Load())
			}
			client.CloseIdleConnections()
			// Scans still running end within their bound; nothing is left.
			deadline := time.Now().Add(15 * time.Second)
			for runtime.NumGoroutine() > before+50 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if g := runtime.NumGoroutine(); g > before+50 {
				t.Errorf("%d goroutines after the load, %d before", g, before)
			}
		})
	}
}
