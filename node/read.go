package node

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
)

// Limits bound what one audit reads; reaching one is said in the audit's
// Limits (a note on the target and an error, exit 2), never silent.
type Limits struct {
	// MaxProcesses is the most /proc/PID directories read.
	MaxProcesses int
	// MaxFDs is the most /proc/PID/fd entries read per process.
	MaxFDs int
	// MaxSockets is the most sockets read from one network namespace.
	MaxSockets int
	// MaxFileBytes is the most bytes read from one small file (stat,
	// status, cmdline, cgroup, a crontab, a unit).
	MaxFileBytes int64
	// MaxNetBytes is the most bytes read from one /proc/PID/net/tcp{,6}.
	MaxNetBytes int64
	// MaxEntries is the most entries read from one directory of cron
	// tables, units or lingering users.
	MaxEntries int
}

// DefaultLimits are generous for a real node (a GPU node runs a few
// thousand processes) and keep memory bounded on a hostile one.
func DefaultLimits() Limits {
	return Limits{MaxProcesses: 200000, MaxFDs: 65536, MaxSockets: 1 << 20,
		MaxFileBytes: 1 << 20, MaxNetBytes: 256 << 20, MaxEntries: 10000}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxProcesses <= 0 {
		l.MaxProcesses = d.MaxProcesses
	}
	if l.MaxFDs <= 0 {
		l.MaxFDs = d.MaxFDs
	}
	if l.MaxSockets <= 0 {
		l.MaxSockets = d.MaxSockets
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxNetBytes <= 0 {
		l.MaxNetBytes = d.MaxNetBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	return l
}

// errTooLarge is a file larger than the limit it was read with.
var errTooLarge = errors.New("larger than the limit")

// reader reads a node tree through an os.Root: every path is inside the
// root, and a symbolic link is read as a link (Readlink), never followed
// out of it.
type reader struct {
	root *os.Root
}

// readFile reads name whole, at most max bytes; a longer file returns the
// first max bytes and errTooLarge.
func (r reader) readFile(name string, max int64) ([]byte, error) {
	f, err := r.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// /proc files say size 0: read to the end, bounded.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > max {
		return b[:max], fmt.Errorf("%s: %w (%d bytes)", name, errTooLarge, max)
	}
	return b, nil
}

// readDir lists at most max entries of dir, sorted by name; more returns
// the first max and errTooLarge.
func (r reader) readDir(dir string, max int) ([]fs.DirEntry, error) {
	f, err := r.root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(max + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var more error
	if len(ents) > max {
		ents = ents[:max]
		more = fmt.Errorf("%s: %w (%d entries)", dir, errTooLarge, max)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int {
		switch {
		case a.Name() < b.Name():
			return -1
		case a.Name() > b.Name():
			return 1
		}
		return 0
	})
	return ents, more
}

func (r reader) readlink(name string) (string, error) { return r.root.Readlink(name) }

func (r reader) lstat(name string) (fs.FileInfo, error) { return r.root.Lstat(name) }

func openRoot(dir string) (*os.Root, error) {
	rt, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("node root: %w", err)
	}
	return rt, nil
}
