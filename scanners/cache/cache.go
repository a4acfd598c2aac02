// Package cache keeps results by content, for every front end and every
// machine that shares a backend: an image layer's findings by its verified
// digests, a Hub file's by its LFS object id, an admission verdict by the
// image digest, a sweep target's result by its digest — each also keyed by
// the rules version, so that an entry never outlives the rules, checks and
// build that made it.
//
// A Store is where bytes go: a directory on this machine (fs, the default)
// or a Redis or Valkey server that CI runners and server replicas share
// (redis:// and rediss:// URLs). A Cache wraps a Store with what every
// backend needs: keys that hold the kind and the rules version, values
// compressed (zstd) and versioned (a format byte) that name their own key,
// a bound on a value's size, and failure handling: a backend that fails is
// a warning and a miss, never an error, and is left alone for a while so
// that a dead server does not slow every lookup.
//
// What may be stored is the caller's rule: keys are digests mlwarden
// computed itself, never ones an artifact only claims (see the image
// source's cache). Anyone who can write to a shared backend can make
// mlwarden replay what they wrote: it is as trusted as the scanner itself
// (its own credentials, TLS, a network only the scanners reach).
package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Kinds of entries.
const (
	// KindLayer is an image layer's result, by diff ID and blob digest.
	KindLayer = "layer"
	// KindHubFile is a Hugging Face Hub file's result, by LFS object id.
	KindHubFile = "hub-file"
	// KindVerdict is an admission verdict, by image digest.
	KindVerdict = "verdict"
	// KindTarget is a sweep target's whole result, by its reference and
	// the digest it resolved to.
	KindTarget = "target"
	// KindVerification is what a provider said of a leaked credential
	// (--verify-secrets), by the credential's salted hash.
	KindVerification = "verification"
)

// ErrMiss is returned by Store.Get when the key holds nothing.
var ErrMiss = errors.New("not in the cache")

// Store keeps values by key. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the value of key, or ErrMiss. A hit refreshes the
	// entry's time to live.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put keeps value under key for ttl (0 or less: the store's bound).
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Close releases the store.
	Close() error
}

// Defaults.
const (
	// DefaultMaxBytes bounds the fs backend.
	DefaultMaxBytes = 2 << 30
	// DefaultTTL is how long an entry unused is kept.
	DefaultTTL = 30 * 24 * time.Hour
	// DefaultMaxValue is the largest value stored, compressed.
	DefaultMaxValue = 16 << 20
	// DefaultRetryAfter is how long a backend that failed is left alone.
	DefaultRetryAfter = 30 * time.Second
	// DefaultTimeout bounds one request to a networked backend.
	DefaultTimeout = 2 * time.Second
)

// Options configures a Cache.
type Options struct {
	// Dir is the fs backend's directory (default
	// os.UserCacheDir()/mlwarden/cache).
	Dir string
	// MaxBytes bounds the fs backend: past it, the least recently used
	// entries go (default DefaultMaxBytes; negative: no bound). A shared
	// server is bounded by its own maxmemory and eviction policy.
	MaxBytes int64
	// TTL is how long an entry that nobody reads is kept (default
	// DefaultTTL; negative: forever, or until the size bound).
	TTL time.Duration
	// MaxValue is the largest value kept, compressed (default
	// DefaultMaxValue): a larger one is not stored.
	MaxValue int
	// Timeout bounds one request to a networked backend (default
	// DefaultTimeout).
	Timeout time.Duration
	// RetryAfter is how long a backend that failed is left alone before
	// it is tried again (default DefaultRetryAfter).
	RetryAfter time.Duration
	// Warn receives what a user should see: a backend that failed (the
	// scan goes on without it). Nil drops it.
	Warn func(string)
}

func (o Options) withDefaults() Options {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxValue <= 0 {
		o.MaxValue = DefaultMaxValue
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	return o
}

// Backends Open accepts, as --cache-backend writes them.
const (
	BackendFS = "fs"
)

// Open returns the cache that backend names: "fs" (or "") for a directory
// on this machine, a redis:// or rediss:// URL for a Redis or Valkey
// server (see OpenRedis). A backend that is written wrong is an error; one
// that does not answer is not (it is a warning at first use).
func Open(backend string, o Options) (*Cache, error) {
	o = o.withDefaults()
	switch {
	case backend == "" || backend == BackendFS:
		dir := o.Dir
		if dir == "" {
			d, err := os.UserCacheDir()
			if err != nil {
				return nil, fmt.Errorf("cache: no directory for the fs backend: %w", err)
			}
			dir = filepath.Join(d, "mlwarden", "cache")
		}
		return New(NewFS(dir, o.MaxBytes, o.TTL), BackendFS, o), nil
	case strings.HasPrefix(backend, "redis://"), strings.HasPrefix(backend, "rediss://"):
		st, err := OpenRedis(backend, o.Timeout, o.TTL)
		if err != nil {
			return nil, err
		}
		return New(st, Redact(backend), o), nil
	}
	return nil, fmt.Errorf("cache backend %q: want fs, redis://HOST:PORT or rediss://HOST:PORT", Redact(backend))
}

// Cache is a Store with keys, encoding and failure handling. A nil *Cache
// is a cache that is off: every Get misses, every Put is dropped.
type Cache struct {
	st   Store
	name string
	o    Options

	downUntil atomic.Int64 // unix nanoseconds; 0: up
	warned    sync.Once
	stats     stats
}

// New wraps st; name says what it is in warnings ("fs",
// "redis://host:6379").
func New(st Store, name string, o Options) *Cache {
	return &Cache{st: st, name: name, o: o.withDefaults()}
}

// Name says what backend the cache is: "fs" or its URL without password.
func (c *Cache) Name() string {
	if c == nil {
		return "off"
	}
	return c.name
}

// Shared reports whether the backend is shared between machines (not fs).
func (c *Cache) Shared() bool { return c != nil && c.name != BackendFS }

// Close closes the backend.
func (c *Cache) Close() error {
	if c == nil {
		return nil
	}
	return c.st.Close()
}

// Key is the store key of an entry.
func Key(kind, rulesVersion, id string) string {
	return "mlwarden/" + kind + "/" + rulesVersion + "/" + id
}

// format is the first byte of every value: zstd-compressed JSON, preceded
// by the entry's key (so that a value found under another key is refused).
// Another byte is another build's format: a miss.
const format byte = 1

var (
	encoderOnce sync.Once
	encoder     *zstd.Encoder
	decoderOnce sync.Once
	decoder     *zstd.Decoder
)

func zenc() *zstd.Encoder {
	encoderOnce.Do(func() {
		encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	})
	return encoder
}

func zdec() *zstd.Decoder {
	decoderOnce.Do(func() {
		decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(128<<20))
	})
	return decoder
}

// encode is format, the key's length and the key, then value compressed.
func encode(key string, value []byte) []byte {
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(key)+len(value)/4+64)
	out = append(out, format)
	out = binary.AppendUvarint(out, uint64(len(key)))
	out = append(out, key...)
	return zenc().EncodeAll(value, out)
}

func decode(key string, data []byte) ([]byte, error) {
	if len(data) == 0 || data[0] != format {
		return nil, errors.New("another format")
	}
	r := bytes.NewReader(data[1:])
	n, err := binary.ReadUvarint(r)
	if err != nil || n != uint64(len(key)) {
		return nil, errors.New("another key")
	}
	rest := data[len(data)-r.Len():]
	if !bytes.HasPrefix(rest, []byte(key)) {
		return nil, errors.New("another key")
	}
	return zdec().DecodeAll(rest[len(key):], nil)
}

// Get returns the value kept under (kind, rulesVersion, id). Anything but
// a hit — a miss, a backend that fails, a value of another format or key —
// is false; a failure also warns once and leaves the backend alone for a
// while.
func (c *Cache) Get(ctx context.Context, kind, rulesVersion, id string) ([]byte, bool) {
	if c == nil || rulesVersion == "" || c.down() {
		return nil, false
	}
	key := Key(kind, rulesVersion, id)
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	data, err := c.st.Get(ctx, key)
	switch {
	case errors.Is(err, ErrMiss):
		c.stats.misses.Add(1)
		return nil, false
	case err != nil:
		c.fail(err)
		return nil, false
	}
	c.stats.bytesRead.Add(int64(len(data)))
	v, err := decode(key, data)
	if err != nil {
		c.stats.misses.Add(1)
		return nil, false
	}
	c.stats.hits.Add(1)
	return v, true
}

// Put keeps value under (kind, rulesVersion, id). It never fails the
// caller: a value too large is dropped, a backend that fails warns once.
func (c *Cache) Put(ctx context.Context, kind, rulesVersion, id string, value []byte) {
	if c == nil || rulesVersion == "" || c.down() {
		return
	}
	key := Key(kind, rulesVersion, id)
	data := encode(key, value)
	if len(data) > c.o.MaxValue {
		c.stats.tooLarge.Add(1)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.o.Timeout)
	defer cancel()
	if err := c.st.Put(ctx, key, data, c.o.TTL); err != nil {
		c.fail(err)
		return
	}
	c.stats.puts.Add(1)
	c.stats.bytesWritten.Add(int64(len(data)))
}

// GetJSON decodes the value kept under (kind, rulesVersion, id) into v.
func (c *Cache) GetJSON(ctx context.Context, kind, rulesVersion, id string, v any) bool {
	data, ok := c.Get(ctx, kind, rulesVersion, id)
	if !ok {
		return false
	}
	return json.Unmarshal(data, v) == nil
}

// PutJSON keeps v, encoded as JSON, under (kind, rulesVersion, id).
func (c *Cache) PutJSON(ctx context.Context, kind, rulesVersion, id string, v any) {
	if c == nil {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	c.Put(ctx, kind, rulesVersion, id, data)
}

func (c *Cache) down() bool {
	until := c.downUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// fail leaves the backend alone for RetryAfter and warns the first time.
func (c *Cache) fail(err error) {
	c.stats.errors.Add(1)
	c.downUntil.Store(time.Now().Add(c.o.RetryAfter).UnixNano())
	c.warned.Do(func() {
		if c.o.Warn != nil {
			c.o.Warn(fmt.Sprintf("result cache %s: %v; scanning without it (results are the same, only slower)", c.name, redactErr(err)))
		}
	})
}

// Maintain bounds the backend (the fs backend's size and age; a server
// bounds itself). It is cheap to call often: the fs backend walks its
// directory at most every few minutes.
func (c *Cache) Maintain(now time.Time) {
	if c == nil {
		return
	}
	if m, ok := c.st.(interface{ Prune(time.Time) }); ok {
		m.Prune(now)
	}
}

// Stats counts what the cache did in this process.
type Stats struct {
	Hits, Misses, Puts, Errors, TooLarge int64
	// BytesRead and BytesWritten are the values' bytes, as stored
	// (compressed).
	BytesRead, BytesWritten int64
}

type stats struct {
	hits, misses, puts, errors, tooLarge, bytesRead, bytesWritten atomic.Int64
}

// Stats returns the counts so far.
func (c *Cache) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	s := &c.stats
	return Stats{Hits: s.hits.Load(), Misses: s.misses.Load(), Puts: s.puts.Load(), Errors: s.errors.Load(),
		TooLarge: s.tooLarge.Load(), BytesRead: s.bytesRead.Load(), BytesWritten: s.bytesWritten.Load()}
}

// readAllLimit reads at most limit bytes of r; more is an error.
func readAllLimit(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("entry larger than %d bytes", limit)
	}
	return data, nil
}
