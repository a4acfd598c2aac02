package image

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mlwarden/mlwarden/scanners/source/netbound"
)

// How a registry is reached.
//
// A registry can stall in the middle of a blob, drip it a byte a second,
// never answer a request, or hang at its token endpoint; none of that may
// keep a scan waiting. Every request goes through one
// scanners/source/netbound Transport per target with one bound
// (Options.NetworkTimeout, --network-timeout, default
// DefaultNetworkTimeout): connect, TLS handshake, response headers and
// every body read get nothing for at most that long, a body sending less
// than 1 KiB in that much waiting fails, and the first such timeout spends
// the target's budget — it is not retried, and the target's later requests
// fail at once — so a registry that never answers ends the target (exit 2)
// within twice the bound.
//
// Requests that fail otherwise on the way (a reset, 429 and 5xx) are
// retried by go-containerregistry three times, waiting a thirtieth of the
// bound, then three times longer each time. A layer whose body fails is an
// error for that layer; the layers already fetched are scanned and their
// findings kept. The run's context (--timeout, the admission deadline)
// cancels every request and every read.

// DefaultNetworkTimeout is Options.NetworkTimeout's default.
const DefaultNetworkTimeout = 30 * time.Second

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
	return []remote.Option{
		remote.WithTransport(netbound.New(netbound.Bound(base, d), d, "the registry")),
		remote.WithRetryBackoff(remote.Backoff{Duration: d / 30, Factor: 3, Jitter: 0.1, Steps: 3}),
		remote.WithRetryPredicate(imgRetry),
	}
}

// imgBoundTransport is base within bound d, for requests made outside
// go-containerregistry's remote (a model artifact's ranged reads): base
// itself when d <= 0.
func imgBoundTransport(base *http.Transport, d time.Duration) http.RoundTripper {
	if d <= 0 {
		return base
	}
	return netbound.New(netbound.Bound(base, d), d, "the registry")
}

// imgRetry is go-containerregistry's retry rule without timeouts: a
// registry that did not answer within the bound is not asked again.
func imgRetry(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	temp, ok := err.(interface{ Temporary() bool }) // as go-containerregistry asks
	return ok && temp.Temporary() && !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}
