package cache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Redis is a Store on a Redis or Valkey server (they speak the same
// protocol): a hit is GETEX, which refreshes the entry's time to live, a put
// SET with one. The server bounds its memory itself (maxmemory with an
// allkeys-lru policy, as the Helm chart's option sets it).
type Redis struct {
	c   *redis.Client
	ttl time.Duration
}

var quietOnce sync.Once

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// OpenRedis returns the store at a redis:// or rediss:// (TLS) URL:
// redis[s]://[USER:PASSWORD@]HOST:PORT[/DB][?OPTIONS], with go-redis'
// options (dial_timeout, pool_size, skip_verify, ...) and ca=FILE, a PEM
// file of the certificate authorities that sign the server's certificate
// (default: the system's). It does not connect: the first request does.
// timeout bounds each request, as the caller's context does (deadline and
// cancellation); ttl is each entry's time to live, renewed
// by every hit (negative: none).
func OpenRedis(rawURL string, timeout, ttl time.Duration) (*Redis, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("cache backend %s: %v", Redact(rawURL), redactErr(err))
	}
	q := u.Query()
	ca := q.Get("ca")
	q.Del("ca")
	u.RawQuery = q.Encode()
	o, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("cache backend %s: %v", Redact(rawURL), redactErr(err))
	}
	if ca != "" {
		if o.TLSConfig == nil {
			return nil, fmt.Errorf("cache backend %s: ca= needs a rediss:// URL", Redact(rawURL))
		}
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("cache backend %s: %w", Redact(rawURL), err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cache backend %s: %s holds no PEM certificate", Redact(rawURL), ca)
		}
		o.TLSConfig.RootCAs = pool
	}
	if o.TLSConfig != nil && o.TLSConfig.MinVersion == 0 {
		o.TLSConfig.MinVersion = tls.VersionTLS12
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = timeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = timeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = timeout
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 1
	}
	// The caller's context bounds every request (the Cache gives each one
	// its Timeout): without this go-redis reads and writes by its own
	// timeouts only, so a server that accepts and never answers held a
	// lookup past a cancelled scan, and forever with read_timeout=-1.
	o.ContextTimeoutEnabled = true
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// go-redis logs pool and reconnect failures to standard error on its
	// own; the Cache reports a failing backend once, as a warning.
	quietOnce.Do(func() { redis.SetLogger(quietLogger{}) })
	return &Redis{c: redis.NewClient(o), ttl: max(ttl, 0)}, nil
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	data, err := r.do(ctx, func(ctx context.Context) ([]byte, error) {
		data, err := r.c.GetEx(ctx, key, r.ttl).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			// A server older than Redis 6.2: no GETEX.
			data, err = r.c.Get(ctx, key).Bytes()
		}
		return data, err
	})
	if errors.Is(err, redis.Nil) {
		return nil, ErrMiss
	}
	return data, err
}

// Put implements Store.
func (r *Redis) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = r.ttl
	}
	_, err := r.do(ctx, func(ctx context.Context) ([]byte, error) { return nil, r.c.Set(ctx, key, value, ttl).Err() })
	return err
}

// do runs one request, returning when ctx is done even if the request
// is still waiting: go-redis bounds its socket reads by ctx's deadline,
// not by its cancellation. The request itself ends by that deadline (the
// Cache gives every request one).
func (r *Redis) do(ctx context.Context, f func(context.Context) ([]byte, error)) ([]byte, error) {
	if ctx.Done() == nil {
		return f(ctx)
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := f(ctx)
		done <- result{data, err}
	}()
	select {
	case res := <-done:
		return res.data, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close implements Store.
func (r *Redis) Close() error { return r.c.Close() }

// Redact writes a backend URL without its password.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if i := strings.LastIndexByte(s, '@'); i >= 0 && strings.Contains(s, "://") {
			scheme, _, _ := strings.Cut(s, "://")
			return scheme + "://***@" + s[i+1:]
		}
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "***")
	}
	return strings.Replace(u.String(), "%2A%2A%2A", "***", 1)
}

// redactErr is err's text with any URL in it redacted.
func redactErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + Redact(ue.URL) + ": " + ue.Err.Error()
	}
	return err.Error()
}
