package cache_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/internal/faultproxy"
	"github.com/mlwarden/mlwarden/internal/redistest"
	"github.com/mlwarden/mlwarden/scanners/cache"
)

// warnings collects what a Cache warns.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) add(s string) { w.mu.Lock(); w.list = append(w.list, s); w.mu.Unlock() }
func (w *warnings) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// backends opens the cache on each backend: fs, and a real Redis plain,
// and over TLS with a password.
func backends(t *testing.T) map[string]string {
	return map[string]string{
		"fs":        "fs",
		"redis":     "redis://" + redistest.Addr(t),
		"redis-tls": redistest.Start(t, redistest.WithTLS(), redistest.WithPassword()).URL(),
	}
}

func TestRoundTrip(t *testing.T) {
	for name, backend := range backends(t) {
		t.Run(name, func(t *testing.T) {
			var w warnings
			c, err := cache.Open(backend, cache.Options{Dir: t.TempDir(), Warn: w.add})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			rv := "v1-" + strings.ReplaceAll(t.Name(), "/", "-") + time.Now().Format("150405.000000000")
			value := bytes.Repeat([]byte(`{"findings":[]}`), 1000)
			if _, ok := c.Get(ctx, cache.KindLayer, rv, "sha256:aa"); ok {
				t.Fatal("hit in an empty cache")
			}
			c.Put(ctx, cache.KindLayer, rv, "sha256:aa", value)
			got, ok := c.Get(ctx, cache.KindLayer, rv, "sha256:aa")
			if !ok || !bytes.Equal(got, value) {
				t.Fatalf("get after put: %v, %d bytes", ok, len(got))
			}
			// Another rules version, kind or id misses.
			for _, k := range [][3]string{{cache.KindLayer, rv + "x", "sha256:aa"}, {cache.KindVerdict, rv, "sha256:aa"}, {cache.KindLayer, rv, "sha256:ab"}} {
				if _, ok := c.Get(ctx, k[0], k[1], k[2]); ok {
					t.Errorf("hit for %v", k)
				}
			}
			// Compressed: the stored bytes are far fewer than the value's.
			if st := c.Stats(); st.BytesWritten == 0 || st.BytesWritten > int64(len(value))/10 || st.Hits != 1 {
				t.Errorf("stats %+v for a %d-byte value", st, len(value))
			}
			// A second client of the same backend (another process, another
			// replica) reads what the first wrote.
			if name != "fs" {
				c2, err := cache.Open(backend, cache.Options{Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				defer c2.Close()
				if got, ok := c2.Get(ctx, cache.KindLayer, rv, "sha256:aa"); !ok || !bytes.Equal(got, value) {
					t.Errorf("second client: %v", ok)
				}
			}
			if len(w.get()) > 0 {
				t.Errorf("warnings: %q", w.get())
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	c, err := cache.Open("fs", cache.Options{Dir: t.TempDir(), MaxValue: 64})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 4096)
	for i := range big {
		big[i] = byte(i * 7919)
	}
	c.Put(t.Context(), cache.KindLayer, "v1", "x", big)
	if _, ok := c.Get(t.Context(), cache.KindLayer, "v1", "x"); ok || c.Stats().TooLarge != 1 {
		t.Errorf("a value over MaxValue was kept: %+v", c.Stats())
	}
}

// TestForeignValues: a value of another format, or one filed under another
// key, is a miss.
func TestForeignValues(t *testing.T) {
	dir := t.TempDir()
	st := cache.NewFS(dir, -1, -1)
	c := cache.New(st, "fs", cache.Options{})
	ctx := t.Context()
	c.Put(ctx, cache.KindLayer, "v1", "a", []byte("value a"))
	a, err := st.Get(ctx, cache.Key(cache.KindLayer, "v1", "a"))
	if err != nil {
		t.Fatal(err)
	}
	st.Put(ctx, cache.Key(cache.KindLayer, "v1", "b"), a, 0) // a's bytes under b's key
	if _, ok := c.Get(ctx, cache.KindLayer, "v1", "b"); ok {
		t.Error("a value filed under another key was read")
	}
	other := append([]byte{0x7f}, a[1:]...)
	st.Put(ctx, cache.Key(cache.KindLayer, "v1", "c"), other, 0)
	if _, ok := c.Get(ctx, cache.KindLayer, "v1", "c"); ok {
		t.Error("a value of another format was read")
	}
	if v, ok := c.Get(ctx, cache.KindLayer, "v1", "a"); !ok || string(v) != "value a" {
		t.Errorf("a: %q %v", v, ok)
	}
}

// TestDown: a backend that does not answer, or dies, is a warning (once)
// and a miss, and is left alone for RetryAfter.
func TestDown(t *testing.T) {
	srv := redistest.Start(t)
	var w warnings
	c, err := cache.Open("redis://"+srv.Addr, cache.Options{Warn: w.add, Timeout: 500 * time.Millisecond, RetryAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	c.Put(ctx, cache.KindLayer, "v1", "a", []byte("x"))
	if _, ok := c.Get(ctx, cache.KindLayer, "v1", "a"); !ok {
		t.Fatal("no hit while up")
	}
	srv.Kill()
	start := time.Now()
	for range 50 {
		if _, ok := c.Get(ctx, cache.KindLayer, "v1", "a"); ok {
			t.Fatal("hit from a dead server")
		}
		c.Put(ctx, cache.KindLayer, "v1", "b", []byte("y"))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("100 requests to a dead backend took %v: it is not left alone", d)
	}
	if got := w.get(); len(got) != 1 || !strings.Contains(got[0], "scanning without it") {
		t.Errorf("warnings %q, want one", got)
	}
	if st := c.Stats(); st.Errors != 1 {
		t.Errorf("errors %d, want 1 (then left alone)", st.Errors)
	}
}

func TestOpenErrors(t *testing.T) {
	for _, b := range []string{"memcached://x", "redis://user:secret@[::1", "redis://h:1?nonsense=1", "redis://h:1?ca=/x"} {
		_, err := cache.Open(b, cache.Options{Dir: t.TempDir()})
		if err == nil {
			t.Errorf("%s: no error", b)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error shows the password: %v", b, err)
		}
	}
	// Not answering is not an error at Open: it is one at first use.
	c, err := cache.Open("redis://127.0.0.1:1", cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got := cache.Redact("rediss://u:pw@h:6380/0?ca=/x"); strings.Contains(got, "pw") || !strings.Contains(got, "h:6380") {
		t.Errorf("Redact: %s", got)
	}
}

func TestFSPrune(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	st := cache.NewFS(root, 800, 30*24*time.Hour)
	dir := filepath.Join(root, cache.KindLayer)
	put := func(name string, size int, age time.Duration) {
		t.Helper()
		os.MkdirAll(dir, 0o700)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, now.Add(-age), now.Add(-age))
	}
	day := 24 * time.Hour
	put("a.mlc", 300, 1*day)         // recent: kept
	put("b.mlc", 300, 2*day)         // kept
	put("c.mlc", 300, 10*day)        // least recently used: goes for size
	put("d.mlc", 300, 40*day)        // too old
	put(".tmp-123", 50, 2*time.Hour) // a killed writer's
	put(".tmp-456", 50, time.Minute) // being written
	list := func() []string {
		var got []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != ".pruned" {
				got = append(got, d.Name())
			}
			return nil
		})
		slices.Sort(got)
		return got
	}
	st.Prune(now)
	if got, want := list(), []string{".tmp-456", "a.mlc", "b.mlc"}; !slices.Equal(got, want) {
		t.Errorf("after prune: %q, want %q", got, want)
	}
	// Pruned a moment ago: the next scan does not walk the cache again.
	put("f.mlc", 900, 90*day)
	st.Prune(now.Add(time.Minute))
	if !slices.Contains(list(), "f.mlc") {
		t.Errorf("pruned again within %v", cache.PruneEvery)
	}
	st.Prune(now.Add(cache.PruneEvery + time.Minute))
	if slices.Contains(list(), "f.mlc") {
		t.Errorf("not pruned after %v", cache.PruneEvery)
	}
	// Bounds off: nothing is deleted.
	off := cache.NewFS(root, -1, -1)
	put("g.mlc", 5000, 400*day)
	os.Remove(filepath.Join(root, ".pruned"))
	off.Prune(now.Add(time.Hour))
	if !slices.Contains(list(), "g.mlc") {
		t.Errorf("pruned with bounds off: %q", list())
	}
}

// TestFSHitRefreshes: a hit marks the entry as used, so the size bound
// evicts what is least recently used, not least recently written; an entry
// older than the time to live is a miss.
func TestFSHitRefreshes(t *testing.T) {
	root := t.TempDir()
	st := cache.NewFS(root, -1, 30*24*time.Hour)
	c := cache.New(st, "fs", cache.Options{})
	c.Put(t.Context(), cache.KindLayer, "v1", "a", []byte("x"))
	var file string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".mlc") {
			file = p
		}
		return nil
	})
	old := time.Now().Add(-20 * 24 * time.Hour)
	os.Chtimes(file, old, old)
	if _, ok := c.Get(t.Context(), cache.KindLayer, "v1", "a"); !ok {
		t.Fatal("no hit")
	}
	if fi, err := os.Stat(file); err != nil || time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("entry time after a hit: %v %v", fi.ModTime(), err)
	}
	older := time.Now().Add(-40 * 24 * time.Hour)
	os.Chtimes(file, older, older)
	if _, ok := c.Get(t.Context(), cache.KindLayer, "v1", "a"); ok {
		t.Error("an entry past its time to live was read")
	}
}

// FuzzGet: whatever bytes a shared backend holds, reading them never
// panics and never returns what another key was written with.
func FuzzGet(f *testing.F) {
	st := cache.NewFS(f.TempDir(), -1, -1)
	c := cache.New(st, "fs", cache.Options{})
	c.Put(context.Background(), cache.KindLayer, "v1", "seed", []byte(`{"findings":[]}`))
	seed, _ := st.Get(context.Background(), cache.Key(cache.KindLayer, "v1", "seed"))
	f.Add(seed)
	f.Add([]byte{1, 0})
	f.Add([]byte{1, 200, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		key := cache.Key(cache.KindLayer, "v1", "fuzz")
		st.Put(context.Background(), key, data, 0)
		c.Get(context.Background(), cache.KindLayer, "v1", "fuzz")
	})
}

// TestSilentRedis: a Redis that accepts connections and never answers
// (nor completes a TLS handshake) is one warning and a cold scan within
// the cache's timeout — also when the URL turns go-redis' own timeouts off
// (read_timeout=-1) — and the caller's context cancels a request at once
// (issue 37, item 12: go-redis ignored the context, so read_timeout=-1
// hung every lookup forever).
func TestSilentRedis(t *testing.T) {
	l, err := faultproxy.Listener()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	for _, tc := range []struct {
		name    string
		url     string
		timeout time.Duration // Options.Timeout
		cancel  time.Duration // the caller's context is cancelled after this (0: never)
		most    time.Duration
	}{
		{"plain", "redis://" + addr, 300 * time.Millisecond, 0, 900 * time.Millisecond},
		{"go-redis timeouts off", "redis://" + addr + "?read_timeout=-1&write_timeout=-1&dial_timeout=-1", 300 * time.Millisecond, 0, 900 * time.Millisecond},
		{"go-redis read timeout off", "redis://" + addr + "?read_timeout=-1", 300 * time.Millisecond, 0, 900 * time.Millisecond},
		{"TLS handshake never answered", "rediss://" + addr + "?skip_verify=true&read_timeout=-1", 300 * time.Millisecond, 0, 900 * time.Millisecond},
		{"the caller cancels", "redis://" + addr + "?read_timeout=-1", time.Minute, 100 * time.Millisecond, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w warnings
			c, err := cache.Open(tc.url, cache.Options{Warn: w.add, Timeout: tc.timeout, RetryAfter: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			start := time.Now()
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Go(func() {
					if _, ok := c.Get(ctx, cache.KindLayer, "v1", string(rune('a'+i))); ok {
						t.Error("a hit from a silent server")
					}
				})
			}
			wg.Wait()
			if tc.cancel == 0 {
				c.Put(ctx, cache.KindLayer, "v1", "z", []byte("x"))
			}
			took := time.Since(start)
			t.Logf("%s: %s, warnings %q", tc.name, took, w.get())
			if took > tc.most {
				t.Errorf("took %s, more than %s", took, tc.most)
			}
			if tc.cancel == 0 && len(w.get()) != 1 {
				t.Errorf("warnings %q, want one", w.get())
			}
		})
	}
}
