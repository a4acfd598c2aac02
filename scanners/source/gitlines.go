package source

import (
	"sync"
)

// gitLines records the lines of each file in the working tree (or HEAD's
// tree), hashed, to tell whether a line some commit added is still there.
// One set holds the hash of (path, line) for every file; it is bounded
// (gitMaxLines entries, about 16 bytes each), and a file whose lines did
// not all fit is marked partial: its history lines are then reported with
// a note that says the comparison could not be made.
type gitLines struct {
	mu           sync.Mutex
	set          map[uint64]struct{}
	partialPaths map[string]bool
	max          int
}

// gitMaxLines bounds the line set (about 128 MiB at most).
const gitMaxLines = 8 << 20

func newGitLines() *gitLines {
	return &gitLines{set: map[uint64]struct{}{}, partialPaths: map[string]bool{}, max: gitMaxLines}
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// gitPathHash is the FNV-1a state after path and a NUL: each line's hash
// goes on from it.
func gitPathHash(path string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(path); i++ {
		h = (h ^ uint64(path[i])) * fnvPrime
	}
	return h * fnvPrime // and a NUL byte: h ^ 0 is h
}

// gitLineHash hashes one line of path, without the carriage returns that
// end it.
func gitLineHash(path string, line []byte) uint64 {
	for len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	h := gitPathHash(path)
	for _, b := range line {
		h = (h ^ uint64(b)) * fnvPrime
	}
	return h
}

func (l *gitLines) addData(path string, data []byte) {
	w := l.adder(path)
	w.Write(data)
	w.Close()
}

// has reports whether path has line in the working tree.
func (l *gitLines) has(path string, line []byte) bool {
	k := gitLineHash(path, line)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.set[k]
	return ok
}

// partial reports whether path's lines were not all recorded.
func (l *gitLines) partial(path string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.partialPaths[path]
}

// adder returns a writer that records the lines written to it, as one file
// of path; Close records the last line.
func (l *gitLines) adder(path string) *gitLineWriter {
	p := gitPathHash(path)
	return &gitLineWriter{l: l, path: path, start: p, h: p}
}

// gitLineWriter hashes lines as they stream by, in bounded memory.
type gitLineWriter struct {
	l       *gitLines
	path    string
	start   uint64
	h       uint64
	cr      int // carriage returns not yet known to end the line
	pending []uint64
	full    bool
}

func (w *gitLineWriter) Write(p []byte) (int, error) {
	h, cr := w.h, w.cr
	for _, b := range p {
		switch b {
		case '\n':
			w.emit(h)
			h, cr = w.start, 0
		case '\r':
			cr++
		default:
			for ; cr > 0; cr-- {
				h = (h ^ '\r') * fnvPrime
			}
			h = (h ^ uint64(b)) * fnvPrime
		}
	}
	w.h, w.cr = h, cr
	return len(p), nil
}

func (w *gitLineWriter) emit(h uint64) {
	if w.full {
		return
	}
	w.pending = append(w.pending, h)
	if len(w.pending) >= 4096 {
		w.flush()
	}
}

func (w *gitLineWriter) flush() {
	l := w.l
	l.mu.Lock()
	for _, h := range w.pending {
		if len(l.set) >= l.max {
			if _, ok := l.set[h]; !ok {
				w.full = true
				l.partialPaths[w.path] = true
				break
			}
		}
		l.set[h] = struct{}{}
	}
	l.mu.Unlock()
	w.pending = w.pending[:0]
}

// Close records the last line (the text after the last newline, empty or
// not) and what is pending.
func (w *gitLineWriter) Close() error {
	w.emit(w.h)
	w.flush()
	w.h, w.cr = w.start, 0
	return nil
}
