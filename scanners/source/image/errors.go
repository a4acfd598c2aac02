package image

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// imgRegistryError turns a registry failure into one line that says what to
// do: unauthorized, not found, rate-limited.
func imgRegistryError(host string, err error) error {
	var te *transport.Error
	if !errors.As(err, &te) {
		return imgOneLine(err)
	}
	has := func(codes ...transport.ErrorCode) bool {
		for _, d := range te.Errors {
			for _, c := range codes {
				if d.Code == c {
					return true
				}
			}
		}
		return false
	}
	switch {
	case te.StatusCode == http.StatusTooManyRequests || has(transport.TooManyRequestsErrorCode):
		return fmt.Errorf("rate-limited by %s: retry later, or log in for a higher limit: %w", host, imgOneLine(err))
	case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden || has(transport.UnauthorizedErrorCode, transport.DeniedErrorCode):
		return fmt.Errorf("unauthorized at %s: log in (docker login %s) or check the credentials and the repository name: %w", host, host, imgOneLine(err))
	case te.StatusCode == http.StatusNotFound || has(transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode):
		return fmt.Errorf("not found at %s: check the repository, tag or digest: %w", host, imgOneLine(err))
	}
	return imgOneLine(err)
}

// imgRegistryErrorMaybe classifies err when the source is a registry.
func imgRegistryErrorMaybe(s *imgSource, err error) error {
	if s.scheme != SchemeRegistry || s.nameRef == nil {
		return err
	}
	return imgRegistryError(s.nameRef.Context().RegistryStr(), err)
}

// imgOneLine keeps an error's text on one line.
type imgLineErr struct{ err error }

func (e imgLineErr) Error() string {
	return strings.Join(strings.Fields(e.err.Error()), " ")
}
func (e imgLineErr) Unwrap() error { return e.err }

func imgOneLine(err error) error {
	if err == nil || !strings.ContainsAny(err.Error(), "\r\n") {
		return err
	}
	return imgLineErr{err}
}
