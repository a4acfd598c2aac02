package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// How a registry is reached.
//
// A registry can stall in the middle of a blob, drip it a byte a second,
// never answer a request, or hang at its token endpoint; none of that may
// keep a scan waiting. Every request gets, from one bound
// (Options.NetworkTimeout, default DefaultNetworkTimeout):
//
//   - a connect timeout, a TLS handshake timeout and a response-header
//     timeout (token, manifest and blob requests alike);
//   - an idle-read timeout on the body: a read that gets nothing for that
//     long fails;
//   - a low-speed bound on the body: fewer than imgLowSpeedBytes in that
//     much time spent waiting for the network fails (time the scan spends
//     elsewhere, with the body unread, does not count), so a drip fails
//     too.
//
// Requests that fail on the way (a timeout before the headers, a reset,
// 429 and 5xx) are retried by go-containerregistry three times, waiting a
// thirtieth of the bound, then three times longer each time. A layer whose
// body fails is an error for that layer; the other layers are scanned and
// their findings kept. The run's context (--timeout, the admission
// deadline) cancels every request and every read.

// DefaultNetworkTimeout is Options.NetworkTimeout's default.
const DefaultNetworkTimeout = 30 * time.Second

// imgLowSpeedBytes is the least a body must deliver per NetworkTimeout of
// waiting.
const imgLowSpeedBytes = 1 << 10

// imgRemoteOptions are the transport and retry options for registry
// requests with bound d.
func imgRemoteOptions(d time.Duration, dial imgDialFunc) []remote.Option {
	if d <= 0 {
		if dial != nil {
			return []remote.Option{remote.WithTransport(imgDialTransport(dial))}
		}
		return nil // no bound: go-containerregistry's defaults
	}
	base := remote.DefaultTransport.(*http.Transport).Clone()
	base.DialContext = (&net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}).DialContext
	if dial != nil {
		base.DialContext = imgBoundDial(dial, d)
	}
	base.TLSHandshakeTimeout = d
	base.ResponseHeaderTimeout = d
	return []remote.Option{
		remote.WithTransport(&imgTransport{base: base, idle: d}),
		remote.WithRetryBackoff(remote.Backoff{Duration: d / 30, Factor: 3, Jitter: 0.1, Steps: 3}),
	}
}

// imgTransport bounds every response body's reads.
type imgTransport struct {
	base http.RoundTripper
	idle time.Duration
}

// errImgStalled is the cause a body's watchdog cancels its request with.
var errImgStalled = errors.New("registry stalled")

func (t *imgTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel(nil)
		return nil, err
	}
	resp.Body = &imgBody{rc: resp.Body, ctx: ctx, cancel: cancel, idle: t.idle}
	return resp, nil
}

// imgBody is a response body whose reads are bounded: each by the idle
// timeout, and all of them by the low-speed rule.
type imgBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration

	mu     sync.Mutex
	waited time.Duration // time spent in Read in this window
	got    int64         // bytes read in this window
}

func (b *imgBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	timer := time.AfterFunc(b.idle, func() { b.cancel(errImgStalled) })
	start := time.Now()
	n, err := b.rc.Read(p)
	timer.Stop()
	if err != nil && errors.Is(context.Cause(b.ctx), errImgStalled) {
		return n, imgNetError{fmt.Errorf("the registry sent nothing for %s", b.idle)}
	}
	b.waited += time.Since(start)
	b.got += int64(n)
	if b.waited >= b.idle {
		if b.got < imgLowSpeedBytes && err == nil {
			b.cancel(errImgStalled)
			return n, imgNetError{fmt.Errorf("the registry sent %d bytes in %s, less than %d", b.got, b.waited.Round(time.Millisecond), imgLowSpeedBytes)}
		}
		b.waited, b.got = 0, 0
	}
	return n, err
}

func (b *imgBody) Close() error {
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

// imgNetError is a registry that stopped sending: a timeout.
type imgNetError struct{ error }

func (e imgNetError) Timeout() bool { return true }
func (e imgNetError) Unwrap() error { return e.error }
