package image

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// imgDialFunc is Options.Dial.
type imgDialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// imgBoundDial bounds a dial function's connect by d, as the net.Dialer it
// replaces is (no bound when d <= 0).
func imgBoundDial(dial imgDialFunc, d time.Duration) imgDialFunc {
	if d <= 0 {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return dial(ctx, network, addr)
	}
}

// imgDialTransport is go-containerregistry's default transport dialling
// with dial.
func imgDialTransport(dial imgDialFunc) http.RoundTripper {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = dial
	return t
}
