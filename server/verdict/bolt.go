package verdict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	bolt "go.etcd.io/bbolt"
)

var boltBucket = []byte("verdicts/v1")

// Bolt is a Store in one bbolt file: one replica needs nothing else.
type Bolt struct {
	db *bolt.DB
}

// OpenBolt opens (creating it if needed) the bbolt file at path.
func OpenBolt(path string) (*Bolt, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open verdict store %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(boltBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("init verdict store %s: %w", path, err)
	}
	return &Bolt{db: db}, nil
}

// Close closes the file.
func (b *Bolt) Close() error { return b.db.Close() }

// boltKey is rules version and digest: the repository is left out, so that the
// same digest pushed to two repositories is scanned once.
func boltKey(digest, rulesVersion string) []byte {
	return []byte(rulesVersion + "\x00" + digest)
}

// Get implements Store.
func (b *Bolt) Get(_ context.Context, ref name.Digest, rulesVersion string) (*Verdict, error) {
	var v *Verdict
	err := b.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(boltBucket).Get(boltKey(ref.DigestStr(), rulesVersion))
		if data == nil {
			return ErrNotFound
		}
		v = new(Verdict)
		return json.Unmarshal(data, v)
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("read verdict %s: %w", ref.DigestStr(), err)
	}
	return v, nil
}

// Put implements Store.
func (b *Bolt) Put(_ context.Context, ref name.Digest, v *Verdict) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode verdict: %w", err)
	}
	if err := b.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(boltBucket).Put(boltKey(ref.DigestStr(), v.RulesVersion), data)
	}); err != nil {
		return fmt.Errorf("write verdict %s: %w", ref.DigestStr(), err)
	}
	return nil
}

// Chain reads from each store in turn and writes to all of them. A verdict
// found in a later store (the registry) is copied into the earlier ones (the
// local file), so the next read is local.
type Chain []Store

// Get implements Store.
func (c Chain) Get(ctx context.Context, ref name.Digest, rulesVersion string) (*Verdict, error) {
	var errs []error
	for i, s := range c {
		v, err := s.Get(ctx, ref, rulesVersion)
		if err == nil {
			for _, earlier := range c[:i] {
				_ = earlier.Put(ctx, ref, v) // a cache fill; the read already succeeded
			}
			return v, nil
		}
		if !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(append([]error{ErrNotFound}, errs...)...)
	}
	return nil, ErrNotFound
}

// Put implements Store.
func (c Chain) Put(ctx context.Context, ref name.Digest, v *Verdict) error {
	var errs []error
	for _, s := range c {
		if err := s.Put(ctx, ref, v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Memory is a Store in a map, for tests and for a server run without a file.
type Memory struct {
	mu sync.RWMutex
	m  map[string]*Verdict
}

// NewMemory returns an empty Memory store.
func NewMemory() *Memory { return &Memory{m: map[string]*Verdict{}} }

// Get implements Store.
func (m *Memory) Get(_ context.Context, ref name.Digest, rulesVersion string) (*Verdict, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if v, ok := m.m[string(boltKey(ref.DigestStr(), rulesVersion))]; ok {
		return v, nil
	}
	return nil, ErrNotFound
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, ref name.Digest, v *Verdict) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[string(boltKey(ref.DigestStr(), v.RulesVersion))] = v
	return nil
}
