//go:build !mlwarden_sbatch

package sweep

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Shard is shard Index of Count (0-based).
type Shard struct {
	Index, Count int
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Name is the shard's report file name: shard-0003-of-0016.json.
func (s Shard) Name() string { return fmt.Sprintf("shard-%04d-of-%04d.json", s.Index, s.Count) }

// ParseShard reads N/M.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	n, err1 := strconv.Atoi(a)
	m, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want N/M, e.g. 0/4", v)
	}
	return Shard{n, m}.check()
}

func (s Shard) check() (Shard, error) {
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return Shard{}, fmt.Errorf("shard %d/%d: want 0 <= N < M", s.Index, s.Count)
	}
	return s, nil
}

// ShardFrom decides this process's shard: shard (N/M) when set; else
// $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's pod) of count, or of
// $JOB_COMPLETIONS when count is 0; else 0/count (0/1 when count is 0:
// everything).
func ShardFrom(shard string, count int, env func(string) (string, bool)) (Shard, error) {
	if env == nil {
		env = os.LookupEnv
	}
	if shard != "" {
		s, err := ParseShard(shard)
		if err == nil && count > 0 && s.Count != count {
			return Shard{}, fmt.Errorf("--shard %s and --shards %d disagree", shard, count)
		}
		return s, err
	}
	if count == 0 {
		if v, ok := env("JOB_COMPLETIONS"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return Shard{}, fmt.Errorf("JOB_COMPLETIONS=%q: not a number", v)
			}
			count = n
		}
	}
	if count == 0 {
		count = 1
	}
	index := 0
	if v, ok := env("JOB_COMPLETION_INDEX"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Shard{}, fmt.Errorf("JOB_COMPLETION_INDEX=%q: not a number", v)
		}
		index = n
	}
	return Shard{index, count}.check()
}

// Split returns shard s of targets: sorted, then every Count-th from
// Index (round-robin), so that every target is in exactly one shard and the
// shards differ in size by one at most; the same list gives the same
// shards in every pod.
func Split(targets []string, s Shard) []string {
	sorted := slices.Clone(targets)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var out []string
	for i := s.Index; i < len(sorted); i += s.Count {
		out = append(out, sorted[i])
	}
	return out
}
