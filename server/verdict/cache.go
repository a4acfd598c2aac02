package verdict

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/mlwarden/mlwarden/scanners/cache"
)

// Cache is a Store in the result cache (scanners/cache): with a Redis or
// Valkey backend (--cache-backend redis://…), every serve replica reads the
// verdicts any replica wrote, and the layers of images they scanned. A
// verdict is keyed, as in every store, by the image digest and the rules
// version (the build, the checks, the config file and its serve: policies).
// A backend that fails is a miss (and one warning): the replica scans
// itself, and its local store still answers.
type Cache struct {
	c *cache.Cache
}

// NewCache returns the store in c.
func NewCache(c *cache.Cache) *Cache { return &Cache{c: c} }

// Get implements Store.
func (s *Cache) Get(ctx context.Context, ref name.Digest, rulesVersion string) (*Verdict, error) {
	var v Verdict
	if !s.c.GetJSON(ctx, cache.KindVerdict, rulesVersion, ref.DigestStr(), &v) || v.Digest != ref.DigestStr() || v.RulesVersion != rulesVersion {
		return nil, ErrNotFound
	}
	return &v, nil
}

// Put implements Store. The cache never fails a write (a backend that is
// down is a warning): a verdict it drops is made again by the next scan.
func (s *Cache) Put(ctx context.Context, ref name.Digest, v *Verdict) error {
	s.c.PutJSON(ctx, cache.KindVerdict, v.RulesVersion, ref.DigestStr(), v)
	return nil
}
