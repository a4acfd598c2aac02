package slurmhook

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// stubborn is a check that ignores its context: a parser stuck on a hostile
// script.
type stubborn struct{ d time.Duration }

func (stubborn) Check() string                         { return scanners.CheckMisconfig }
func (stubborn) Rules() []scanners.Rule                { return nil }
func (stubborn) Wants(*scanners.Artifact, []byte) bool { return true }
func (s stubborn) Scan(context.Context, *scanners.Artifact, scanners.Content) ([]scanners.Finding, error) {
	time.Sleep(s.d)
	return nil, nil
}

// serveTest serves c on a socket in a temporary directory.
func serveTest(t *testing.T, c *Checker, timeout time.Duration) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "check.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { (&Server{Checker: c, Timeout: timeout, Workers: 2}).Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

// TestCheckDeadline: a check whose run ignores its context is answered
// "could not check" (exit 2) by the deadline, in process and on the socket.
func TestCheckDeadline(t *testing.T) {
	sc, err := scan.New(scan.Options{Scanners: []scanners.Scanner{stubborn{3 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	c := &Checker{Scanner: sc}
	req := Request{Name: "job.sh", Script: []byte("#!/bin/bash\n#SBATCH -N 1\nsrun true\n")}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	var out bytes.Buffer
	if code := c.Check(ctx, req, &out); code != scan.ExitError || !strings.Contains(out.String(), "deadline") {
		t.Errorf("in process: exit %d %q", code, out.String())
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("in process: answered after %s, deadline 300ms", el)
	}

	sock := serveTest(t, c, 300*time.Millisecond)
	start = time.Now()
	code, lines, err := Ask(context.Background(), sock, req, 5*time.Second)
	if err != nil || code != scan.ExitError {
		t.Errorf("socket: exit %d %q %v", code, lines, err)
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("socket: answered after %s, deadline 300ms", el)
	}
}

// TestDirectiveDenseScript: a script of 2 MiB of #SBATCH lines (the
// submission rules compared every directive with every setting: 56 s)
// is checked in full within the hook's 10 s, through the real checks.
func TestDirectiveDenseScript(t *testing.T) {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	for i := 0; b.Len() < 2<<20; i++ {
		fmt.Fprintf(&b, "#SBATCH --comment=c%d\n", i)
	}
	b.WriteString("srun true\n")
	sc, err := scan.New(scan.Options{Checks: []string{"secrets", "pins", "misconfig"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	c := &Checker{Scanner: sc}
	sock := serveTest(t, c, 10*time.Second)
	start := time.Now()
	code, lines, err := Ask(context.Background(), sock, Request{Name: "dense.sh", Script: []byte(b.String()),
		Args: []string{"--comment=override"}}, 20*time.Second)
	el := time.Since(start)
	if err != nil || code == scan.ExitError {
		t.Fatalf("exit %d after %s: %.300s %v", code, el, lines, err)
	}
	t.Logf("2 MiB of #SBATCH lines checked in %s", el.Round(time.Millisecond))
}

// TestRequestBound: the fields other than the script are bounded together
// (10,000 fields of 1 MiB were accepted: 10 GiB per request), and a
// declared length is not allocated before the bytes arrive.
func TestRequestBound(t *testing.T) {
	var b bytes.Buffer
	big := bytes.Repeat([]byte("A"), 600<<10)
	WriteNetstring(&b, "env", append([]byte("X="), big...))
	WriteNetstring(&b, "env", append([]byte("Y="), big...))
	WriteNetstring(&b, "script", []byte("#!/bin/sh\n"))
	if _, err := ReadRequest(bufio.NewReader(&b)); err == nil || !strings.Contains(err.Error(), "together") {
		t.Errorf("1.2 MiB of env accepted: %v", err)
	}
	// A client that declares 16 MiB and sends 10 bytes.
	r := io.MultiReader(strings.NewReader("6:script,16777216:"), strings.NewReader("0123456789"))
	if _, err := ReadRequest(bufio.NewReader(r)); err == nil {
		t.Error("a short script accepted")
	}
	// On the socket: a request that never ends is cut at the deadline.
	sc, _ := scan.New(scan.Options{Scanners: []scanners.Scanner{stubborn{0}}})
	sock := serveTest(t, &Checker{Scanner: sc}, 300*time.Millisecond)
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "6:script,1000:abc")
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(resp), "exit 2") {
		t.Errorf("answer to a stalled request: %q", resp)
	}
}
