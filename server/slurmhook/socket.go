package slurmhook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scan"
)

// The checker server: one long-lived process sets the checks up once and
// answers one request per connection on a Unix socket, so that a
// submission costs a check, not a process start and a set-up
// (job_submit.lua talks to it with lua-socket; Ask is the Go client).
//
// Request: netstrings ("<len>:<bytes>,"), read as key/value pairs: "name",
// "env" (NAME=VALUE, repeatable), "arg" (one word, repeatable), "fail-on",
// "show", and last "script". Response: "exit N\n", then the text lines.
// Netstrings because Lua 5.1 writes them with one string.format, and every
// byte of a script survives them.

// MaxScript bounds the script read (Slurm's own default max_script_size is
// 4 MiB).
const MaxScript = 16 << 20

// maxFields bounds the bytes of a request's other fields together (name,
// env, arg, fail-on, show): with MaxScript, what one request may make the
// checker hold. (A check of a directive-dense script peaks at about 120
// times the script's size; see docs/design/sbatch-hook.md.)
const maxFields = 1 << 20

// Server answers checks on a Unix socket.
type Server struct {
	Checker *Checker
	// Timeout bounds one check, reading the request included (default 10s).
	Timeout time.Duration
	// Workers bounds the checks answered at once (default 2).
	Workers int
	// Log receives one line per check; nil drops them.
	Log func(format string, args ...any)
}

// Listen opens the socket at path, readable and writable by this user
// only (Slurm's SlurmUser). A socket left by a checker that died is
// removed; anything else at path is an error.
func Listen(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
			conn.Close()
			return nil, fmt.Errorf("a checker already serves on %s", path)
		}
		os.Remove(path)
	}
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	return l, err
}

// Serve answers connections on l until ctx is done; then it closes l.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	sem := make(chan struct{}, max(2, s.Workers))
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			start := time.Now()
			code := s.serveConn(ctx, conn, timeout)
			if s.Log != nil {
				s.Log("checked a script: exit %d in %s", code, time.Since(start).Round(10*time.Microsecond))
			}
		}()
	}
}

func (s *Server) serveConn(ctx context.Context, conn net.Conn, timeout time.Duration) int {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	req, err := ReadRequest(bufio.NewReader(conn))
	if err != nil {
		conn.SetWriteDeadline(time.Now().Add(time.Second)) // the read may have used up the deadline
		fmt.Fprintf(conn, "exit %d\nmlwarden: bad request: %v\n", scan.ExitError, err)
		return scan.ExitError
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	code, done := s.Checker.check(cctx, req, &out)
	if cctx.Err() != nil {
		code = scan.ExitError
		out.Reset()
		fmt.Fprintf(&out, "mlwarden: could not check the script within %s\n", timeout)
	}
	// The answer goes out by the deadline; the worker slot is held until
	// the run is over.
	conn.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(conn, "exit %d\n", code)
	conn.Write(out.Bytes())
	conn.Close()
	<-done
	return code
}

// readNetstring reads one netstring of at most limit bytes. The buffer grows
// with what arrives, not with the length the client declares.
func readNetstring(r *bufio.Reader, limit int) ([]byte, error) {
	n := 0
	for digits := 0; ; digits++ {
		b, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		if b == ':' && digits > 0 {
			break
		}
		if b < '0' || b > '9' || digits >= 9 {
			return nil, fmt.Errorf("malformed netstring")
		}
		n = n*10 + int(b-'0')
	}
	if n > limit {
		return nil, fmt.Errorf("field of %d bytes is larger than %d", n, limit)
	}
	var b bytes.Buffer
	if m, err := io.CopyN(&b, r, int64(n)+1); err != nil {
		if err == io.EOF && m < int64(n)+1 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	buf := b.Bytes()
	if buf[n] != ',' {
		return nil, fmt.Errorf("malformed netstring")
	}
	return buf[:n], nil
}

// ReadRequest reads one request in the socket's netstring form: a script
// of at most MaxScript bytes and at most maxFields bytes of other fields.
func ReadRequest(r *bufio.Reader) (Request, error) {
	req := Request{Name: "job script"}
	left := maxFields
	for fields := 0; ; fields++ {
		if fields > 10000 {
			return req, fmt.Errorf("too many fields")
		}
		key, err := readNetstring(r, 64)
		if err != nil {
			return req, fmt.Errorf("read key: %w", err)
		}
		limit := left
		if string(key) == "script" {
			limit = MaxScript
		}
		val, err := readNetstring(r, limit)
		if err != nil {
			if string(key) != "script" && strings.Contains(err.Error(), "larger than") {
				err = fmt.Errorf("the request's fields other than the script are larger than %d bytes together", maxFields)
			}
			return req, fmt.Errorf("read %s: %w", key, err)
		}
		if string(key) != "script" {
			left -= len(key) + len(val)
		}
		switch string(key) {
		case "script":
			req.Script = val
			return req, nil
		case "name":
			req.Name = string(val)
		case "env":
			req.Env = append(req.Env, string(val))
		case "arg":
			req.Args = append(req.Args, string(val))
		case "fail-on", "show":
			if string(key) == "fail-on" && string(val) == "none" {
				req.NeverFail = true
				continue
			}
			sev, err := scanners.ParseSeverity(string(val))
			if err != nil {
				return req, fmt.Errorf("%s: %w", key, err)
			}
			if string(key) == "fail-on" {
				req.FailOn = &sev
			} else {
				req.Show = &sev
			}
		default:
			return req, fmt.Errorf("unknown field %q", key)
		}
	}
}

// WriteNetstring appends one key/value pair in the socket's form.
func WriteNetstring(w *bytes.Buffer, key string, val []byte) {
	fmt.Fprintf(w, "%d:%s,%d:", len(key), key, len(val))
	w.Write(val)
	w.WriteByte(',')
}

// Ask sends req to the checker on socket and returns its exit code and
// lines. timeout bounds the whole exchange; an error means nothing
// answered (the caller then checks in-process).
func Ask(ctx context.Context, socket string, req Request, timeout time.Duration) (int, []byte, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "unix", socket)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	var b bytes.Buffer
	WriteNetstring(&b, "name", []byte(req.Name))
	for _, e := range req.Env {
		WriteNetstring(&b, "env", []byte(e))
	}
	for _, a := range req.Args {
		WriteNetstring(&b, "arg", []byte(a))
	}
	switch {
	case req.NeverFail:
		WriteNetstring(&b, "fail-on", []byte("none"))
	case req.FailOn != nil:
		WriteNetstring(&b, "fail-on", []byte(req.FailOn.String()))
	}
	if req.Show != nil {
		WriteNetstring(&b, "show", []byte(req.Show.String()))
	}
	WriteNetstring(&b, "script", req.Script)
	if _, err := conn.Write(b.Bytes()); err != nil {
		return 0, nil, err
	}
	resp, err := io.ReadAll(io.LimitReader(conn, 16<<20))
	if err != nil {
		return 0, nil, err
	}
	head, rest, _ := bytes.Cut(resp, []byte("\n"))
	var code int
	if _, err := fmt.Sscanf(string(head), "exit %d", &code); err != nil {
		return 0, nil, fmt.Errorf("bad answer from %s: %q", socket, head)
	}
	return code, rest, nil
}
