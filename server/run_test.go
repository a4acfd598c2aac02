//go:build !mlwarden_sbatch

package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/server"
)

func selfSignedPair(t *testing.T) (string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	return cf, kf
}

// TestRunTLS serves HTTPS, answers the probes and metrics, and shuts down
// when its context ends.
func TestRunTLS(t *testing.T) {
	cf, kf := selfSignedPair(t)
	s, err := server.New(server.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, server.ListenConfig{Addr: "127.0.0.1:0", CertFile: cf, KeyFile: kf}, func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(p string) (int, string) {
		resp, err := c.Get("https://" + addr.String() + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("readyz %d", code)
	}
	// One admission so that the histogram has a sample.
	resp, err := c.Post("https://"+addr.String()+"/admission", "application/json",
		strings.NewReader(`{"request":{"uid":"x","kind":{"kind":"Pod"},"operation":"DELETE"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	code, metrics := get("/metrics")
	for _, want := range []string{"mlwarden_http_requests_total", "mlwarden_admission_duration_seconds_bucket",
		"mlwarden_scans_in_flight", "mlwarden_scan_failures_total", "go_goroutines"} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("no graceful shutdown")
	}
	if err := s.Run(context.Background(), server.ListenConfig{Addr: "0.0.0.0:0"}, nil); err != server.ErrPlainHTTP {
		t.Errorf("plain HTTP on all interfaces: %v", err)
	}
}
