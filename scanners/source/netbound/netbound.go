// Package netbound bounds the waits of HTTP requests to a server that may
// stall, drip or never answer: a registry, the Hugging Face Hub. The image
// source, the Hub source and sweep's listings share it, so that every one
// of them waits the same way.
//
// Every request through a Transport with bound D gets:
//
//   - a connect timeout, a TLS handshake timeout and a response-header
//     timeout of D (Bound sets them on an *http.Transport);
//   - an idle-read timeout on the body: a read that gets nothing for D
//     fails;
//   - a low-speed floor on the body: fewer than Floor bytes (default
//     DefaultFloor) in D spent waiting for the network fails (time the
//     caller spends elsewhere, with the body unread, does not count), so a
//     drip fails too;
//   - one budget per Transport — per target, as the sources make one per
//     target: the first of those timeouts spends it. The request fails
//     with an error that is a timeout and not temporary (so retry loops
//     that retry 5xx and resets do not retry it), and every request
//     started later fails at once with the same error. Requests already
//     under way keep their own bounds, so a server that never answers
//     costs a target at most 2·D, whatever it asks for afterwards.
//
// The request's context (the run's --timeout, an admission deadline)
// still cancels every request and every read.
package netbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultFloor is the least a body must deliver per bound of waiting.
const DefaultFloor = 1 << 10

// Bound bounds t's connect (its DialContext, or a net.Dialer's when it
// has none), TLS handshake and response headers by d and returns it.
func Bound(t *http.Transport, d time.Duration) *http.Transport {
	if d <= 0 {
		return t
	}
	if dial := t.DialContext; dial != nil {
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return dial(ctx, network, addr)
		}
	} else {
		t.DialContext = (&net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}).DialContext
	}
	t.TLSHandshakeTimeout = d
	t.ResponseHeaderTimeout = d
	return t
}

// Transport bounds the waits of the requests it makes through Base.
type Transport struct {
	// Base makes the requests (default http.DefaultTransport). Its own
	// connect, TLS and header timeouts should be D's (Bound).
	Base http.RoundTripper
	// D is the bound; 0 or less: none (Base alone).
	D time.Duration
	// Floor is the least a body sends per D of waiting (default
	// DefaultFloor).
	Floor int64
	// Server names the server in messages ("the registry", "the Hub").
	Server string

	spent atomic.Pointer[Error]
}

// New returns a Transport with bound d in front of base.
func New(base http.RoundTripper, d time.Duration, server string) *Transport {
	return &Transport{Base: base, D: d, Server: server}
}

// Error is a server that sent nothing for the bound, or too little: a
// timeout (net.Error), never temporary.
type Error struct {
	msg string
	// Earlier is set on the error of a request that was not sent because
	// an earlier one spent the budget.
	Earlier bool
}

func (e *Error) Error() string   { return e.msg }
func (e *Error) Timeout() bool   { return true }
func (e *Error) Temporary() bool { return false }

// Spent is the error that spent the budget, or nil.
func (t *Transport) Spent() error {
	if e := t.spent.Load(); e != nil {
		return e
	}
	return nil
}

func (t *Transport) spend(msg string) *Error {
	e := &Error{msg: msg}
	t.spent.CompareAndSwap(nil, e) // the first spends the budget
	return e
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

func (t *Transport) server() string {
	if t.Server != "" {
		return t.Server
	}
	return "the server"
}

// errStalled is the cause a body's watchdog cancels its request with.
var errStalled = errors.New("stalled")

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.D <= 0 {
		return t.base().RoundTrip(req)
	}
	if e := t.spent.Load(); e != nil {
		return nil, &Error{msg: e.msg + " (earlier in this target: not asked again)", Earlier: true}
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := t.base().RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel(nil)
		var ne net.Error
		if req.Context().Err() == nil && errors.As(err, &ne) && ne.Timeout() {
			// Connect, TLS or headers: nothing came for D.
			return nil, t.spend(fmt.Sprintf("%s did not answer within %s (%v)", t.server(), t.D, err))
		}
		return nil, err
	}
	floor := t.Floor
	if floor <= 0 {
		floor = DefaultFloor
	}
	resp.Body = &body{rc: resp.Body, ctx: ctx, cancel: cancel, t: t, floor: floor}
	return resp, nil
}

// body is a response body whose reads are bounded: each by the idle
// timeout, and all of them by the floor.
type body struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	t      *Transport
	floor  int64

	mu     sync.Mutex
	waited time.Duration // time spent in Read in this window
	got    int64         // bytes read in this window
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.t.D
	timer := time.AfterFunc(d, func() { b.cancel(errStalled) })
	start := time.Now()
	n, err := b.rc.Read(p)
	timer.Stop()
	if err != nil && errors.Is(context.Cause(b.ctx), errStalled) {
		return n, b.t.spend(fmt.Sprintf("%s sent nothing for %s", b.t.server(), d))
	}
	b.waited += time.Since(start)
	b.got += int64(n)
	if b.waited >= d {
		if b.got < b.floor && err == nil {
			b.cancel(errStalled)
			return n, b.t.spend(fmt.Sprintf("%s sent %d bytes in %s, less than %d", b.t.server(), b.got, b.waited.Round(time.Millisecond), b.floor))
		}
		b.waited, b.got = 0, 0
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
