// Package literal finds many literal strings in text at once, ignoring the
// case of ASCII letters: the secrets check's keyword and rule-start pass,
// the misconfig check's prefilter.
package literal

// Finder finds where any of a set of literals occurs in text, ignoring the
// case of ASCII letters, as gitleaks' keyword prefilter does on lower-cased
// text. Written here rather than taken from an Aho-Corasick library: with
// the ~280 keywords of the built-in secrets rules, whose first bytes are
// most letters, the automata of github.com/BobuSumisu/aho-corasick and
// github.com/coregx/ahocorasick both ran at about 195 MB/s (a transition
// per byte, no prefilter that pays), and the keyword pass was the largest
// cost left on text without secrets. Most places are ruled out by a bit
// per pair of lower-cased bytes that some literal starts with and a bit per
// third byte; the rest are compared with the literals that start so.
// FuzzFinder compares it with a plain search; the secrets check's
// TestKeywordFinder with an Aho-Corasick trie on every rule's cases.
//
// A Finder takes 11 KiB, half a KiB per first byte of its literals, and
// the literals. It is safe for concurrent use.
type Finder struct {
	pairs [1 << 16 / 64]uint64 // bit a<<8|b: a keyword starts with bytes a, b
	// slot[a][b] is 1 + the index in start of the starts of pair a, b; a
	// page only for the first bytes that occur, not one table of all pairs
	// (128 KiB), which a one-script process (the sbatch hook) paid for in
	// page faults at each finder made.
	slot  [256]*[256]uint16
	start []starts
	one   [256]int32 // 1 + the index of a one-byte keyword
	ones  bool       // there are some
	n     int        // keywords
}

// starts is what the keywords that start with one pair of bytes hold
// after it.
type starts struct {
	pair  int32     // 1 + the index of the pair itself as a keyword
	third [4]uint64 // bit c: a keyword goes on with byte c
	tails []string  // the keywords' bytes after the pair
	ids   []int32   // their indexes
}

// lowerTable maps a byte to its ASCII lower case.
var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// New returns a finder of lits, which are lower case (a literal with an
// upper-case ASCII letter is never found); a literal's index in lits is
// its id.
func New(lits []string) *Finder {
	f := &Finder{n: len(lits)}
	for i, k := range lits {
		id := int32(i)
		switch len(k) {
		case 0:
		case 1:
			f.one[k[0]], f.ones = id+1, true
		default:
			p := uint16(k[0])<<8 | uint16(k[1])
			page := f.slot[k[0]]
			if page == nil {
				page = new([256]uint16)
				f.slot[k[0]] = page
			}
			if page[k[1]] == 0 {
				f.start = append(f.start, starts{})
				page[k[1]] = uint16(len(f.start))
				f.pairs[p>>6] |= 1 << (p & 63)
			}
			st := &f.start[page[k[1]]-1]
			if len(k) == 2 {
				st.pair = id + 1
				continue
			}
			st.third[k[2]>>6] |= 1 << (k[2] & 63)
			st.tails = append(st.tails, k[2:])
			st.ids = append(st.ids, id)
		}
	}
	return f
}

// startsOf returns the starts of pair p, whose bit is set.
func (f *Finder) startsOf(p uint16) *starts { return &f.start[f.slot[p>>8][p&255]-1] }

// candidate returns the starts of the keywords with raw[i] and raw[i+1]
// as their first two bytes, or nil.
func candidate[T string | []byte](f *Finder, raw T, i int) *starts {
	if i+1 >= len(raw) {
		return nil
	}
	p := uint16(lowerTable[raw[i]])<<8 | uint16(lowerTable[raw[i+1]])
	if f.pairs[p>>6]&(1<<(p&63)) == 0 {
		return nil
	}
	return f.startsOf(p)
}

// next returns where the first keyword at or after from starts in raw,
// or -1.
func next[T string | []byte](f *Finder, raw T, from int) int {
	if f.ones {
		return nextWithOnes(f, raw, from)
	}
	if from >= len(raw)-1 {
		return -1
	}
	// The pair's first byte is carried from one place to the next: one
	// table look-up per byte, then a bit.
	a := uint16(lowerTable[raw[from]]) << 8
	for i := from; i+1 < len(raw); i++ {
		b := uint16(lowerTable[raw[i+1]])
		p := a | b
		a = b << 8
		if f.pairs[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		st := f.startsOf(p)
		if st.pair == 0 {
			// The third byte here, not in matchAt: a sixth of the places
			// in code pass the pair, one in a hundred the third byte.
			if i+2 >= len(raw) {
				continue
			}
			if !st.goesOn(lowerTable[raw[i+2]]) {
				continue
			}
		}
		if matchAt(raw, i, st) {
			return i
		}
	}
	return -1
}

// nextWithOnes is next for a finder with one-byte literals.
func nextWithOnes[T string | []byte](f *Finder, raw T, from int) int {
	for i := from; i < len(raw); i++ {
		if f.one[lowerTable[raw[i]]] != 0 {
			return i
		}
		if st := candidate(f, raw, i); st != nil && matchAt(raw, i, st) {
			return i
		}
	}
	return -1
}

// goesOn reports whether a literal of st has c as its third byte.
func (st *starts) goesOn(c byte) bool { return st.third[c>>6]&(1<<(c&63)) != 0 }

// matchAt reports whether a literal of st, whose first two bytes are at
// i, starts at i.
func matchAt[T string | []byte](raw T, i int, st *starts) bool {
	if st.pair != 0 {
		return true
	}
	if i+2 >= len(raw) {
		return false
	}
	if !st.goesOn(lowerTable[raw[i+2]]) {
		return false
	}
	for _, t := range st.tails {
		if hasFoldedPrefix(raw[i+2:], t) {
			return true
		}
	}
	return false
}

// each calls hit for every place in raw where a keyword starts, with its
// id, in the order of the places.
func each[T string | []byte](f *Finder, raw T, hit func(at int, id int32)) {
	var a uint16
	if len(raw) > 0 {
		a = uint16(lowerTable[raw[0]]) << 8
	}
	for i := 0; i < len(raw); i++ {
		if f.ones {
			if id := f.one[lowerTable[raw[i]]]; id != 0 {
				hit(i, id-1)
			}
		}
		if i+1 == len(raw) {
			break
		}
		b := uint16(lowerTable[raw[i+1]])
		p := a | b
		a = b << 8
		if f.pairs[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		st := f.startsOf(p)
		if st.pair != 0 {
			hit(i, st.pair-1)
		}
		if i+2 == len(raw) {
			continue
		}
		if !st.goesOn(lowerTable[raw[i+2]]) {
			continue
		}
		for k, t := range st.tails {
			if hasFoldedPrefix(raw[i+2:], t) {
				hit(i, st.ids[k])
			}
		}
	}
}

// hasFoldedPrefix reports whether s starts with t (lower case) when the
// ASCII letters of s are lower-cased.
func hasFoldedPrefix[T string | []byte](s T, t string) bool {
	if len(s) < len(t) {
		return false
	}
	for i := 0; i < len(t); i++ {
		if lowerTable[s[i]] != t[i] {
			return false
		}
	}
	return true
}

// Len returns how many literals f finds.
func (f *Finder) Len() int { return f.n }

// Next returns where the first literal at or after from starts in s, or
// -1.
func (f *Finder) Next(s string, from int) int { return next(f, s, from) }

// NextBytes is Next over b.
func (f *Finder) NextBytes(b []byte, from int) int { return next(f, b, from) }

// Each calls hit for every place in s where a literal starts, with the
// literal's id, in the order of the places (literals that start at one
// place in no order).
func (f *Finder) Each(s string, hit func(at int, id int32)) { each(f, s, hit) }

// Lower returns c lower-cased if it is an ASCII letter.
func Lower(c byte) byte { return lowerTable[c] }
