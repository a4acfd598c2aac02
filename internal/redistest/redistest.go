// Package redistest gives tests a Redis server on loopback: Debian's
// redis-server (Valkey's valkey-server works the same), the one .ci/run
// starts and names in MLWARDEN_TEST_REDIS=127.0.0.1:PORT, or one the test
// starts itself for its own life (to kill it, or with TLS and a password).
// Without the binary a test skips, naming the package to install; under
// CI=true it fails instead.
//
// The package is internal: it is test support for this module only.
package redistest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/integration"
)

// Env names the variable that holds the shared server's host:port.
const Env = "MLWARDEN_TEST_REDIS"

// Install is how to get the server binary.
const Install = "apt-get install redis-server (or valkey-server)"

// Binary returns the path of redis-server or valkey-server, skipping the
// test (failing it under CI=true) when neither is installed.
func Binary(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"redis-server", "valkey-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	integration.Skip(t, "a Redis server", "neither redis-server nor valkey-server is on PATH", Install)
	return ""
}

// Addr returns the host:port of a plain Redis server with no password:
// the one in MLWARDEN_TEST_REDIS when set (it must answer), else one started
// for the test. Tests that share it use keys of their own (a rules version
// of their own).
func Addr(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv(Env); addr != "" {
		if err := ping(addr); err != nil {
			t.Fatalf("%s=%s: %v; start it again or unset %s", Env, addr, err, Env)
		}
		integration.Ran(t, "the Redis server", addr)
		return addr
	}
	return Start(t).Addr
}

// Server is a Redis server the test started.
type Server struct {
	// Addr is 127.0.0.1:PORT.
	Addr string
	// Password is set when the server requires one (WithPassword).
	Password string
	// CAFile is the PEM file that signs the server's certificate (WithTLS).
	CAFile string
	cmd    *exec.Cmd
	done   chan struct{}
}

// URL is the --cache-backend URL of the server: redis:// or, with TLS,
// rediss://, with the password and ca= when set.
func (s *Server) URL() string {
	scheme := "redis"
	if s.CAFile != "" {
		scheme = "rediss"
	}
	auth := ""
	if s.Password != "" {
		auth = ":" + s.Password + "@"
	}
	u := scheme + "://" + auth + s.Addr
	if s.CAFile != "" {
		u += "?ca=" + s.CAFile
	}
	return u
}

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	<-s.done
}

// Option configures Start.
type Option func(*startConfig)

type startConfig struct {
	tls      bool
	password bool
}

// WithTLS serves TLS only, with a certificate for 127.0.0.1 signed by a
// new CA (Server.CAFile).
func WithTLS() Option { return func(c *startConfig) { c.tls = true } }

// WithPassword requires a random password (Server.Password).
func WithPassword() Option { return func(c *startConfig) { c.password = true } }

// Start runs a server of the test's own on a free loopback port, with no
// persistence, until the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var c startConfig
	for _, o := range opts {
		o(&c)
	}
	bin := Binary(t)
	dir := t.TempDir()
	port := freePort(t)
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
	args := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no"}
	if c.tls {
		cert, key, ca := certs(t, dir)
		s.CAFile = ca
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
			"--tls-ca-cert-file", ca, "--tls-auth-clients", "no")
	} else {
		args = append(args, "--port", strconv.Itoa(port))
	}
	if c.password {
		var b [12]byte
		rand.Read(b[:])
		s.Password = hex.EncodeToString(b[:])
		args = append(args, "--requirepass", s.Password)
	}
	log, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() { s.cmd.Wait(); log.Close(); close(s.done) }()
	t.Cleanup(s.Kill)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-s.done:
			data, _ := os.ReadFile(log.Name())
			t.Fatalf("%s exited: %s", bin, data)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s", bin, s.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	integration.Ran(t, filepath.Base(bin), s.Addr)
	return s
}

// ping sends PING and wants +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return fmt.Errorf("redis does not answer: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// certs writes a CA and a server certificate for 127.0.0.1 it signs.
func certs(t testing.TB, dir string) (cert, key, ca string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mlwarden test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER), write("ca.pem", "CERTIFICATE", caDER)
}
