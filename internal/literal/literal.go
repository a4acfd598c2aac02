// Package literal finds many literal strings in text at once, ignoring the
// case of ASCII letters: the secrets check's keyword and rule-start pass,
// the misconfig check's prefilter.
package literal

import "math/bits"

// Finder finds where any of a set of literals occurs in text, ignoring the
// case of ASCII letters, as gitleaks' keyword prefilter does on lower-cased
// text. Written here rather than taken from an Aho-Corasick library: with
// the ~280 keywords of the built-in secrets rules, whose first bytes are
// most letters, the automata of github.com/BobuSumisu/aho-corasick and
// github.com/coregx/ahocorasick both ran at about 195 MB/s (a transition
// per byte, no prefilter that pays), and the keyword pass was the largest
// cost left on text without secrets. A table of the pairs of bytes (in
// either case) that some literal starts with is read for 64 places at a
// time into a mask, without a branch (pairMask, for Each); the places it
// keeps (a fifth, in code) are ruled out by a hash of their first three
// bytes, the rest compared with the literals that start so. Next, and
// finders with one-byte literals (only users' rules have them), go byte by
// byte with a bit per pair of lower-cased bytes.
// FuzzFinder compares it with a plain search; the secrets check's
// TestKeywordFinder with an Aho-Corasick trie on every rule's cases.
//
// A Finder takes about 90 KiB (the pair table 64 KiB, of which only the
// rows of its literals' first bytes are written), half a KiB per first
// byte of its literals, and the literals. It is safe for concurrent use.
type Finder struct {
	pairs [1 << 16 / 64]uint64 // bit a<<8|b: a keyword starts with bytes a, b
	// tri has bit triHash(a, b, c) for each keyword that starts with bytes
	// a, b, c; two bit a<<8|b for each keyword a, b of two bytes, and twos
	// whether there is one.
	tri  [1 << triBits / 64]uint64
	two  [1 << 16 / 64]uint64
	twos bool
	// pairTab[a<<8|b] is 1 where some keyword starts with the bytes a, b
	// in any case of their ASCII letters.
	pairTab *[1 << 16]uint8
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
	f := &Finder{n: len(lits), pairTab: new([1 << 16]uint8)}
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
				for _, a := range caseOf(k[0]) {
					for _, b := range caseOf(k[1]) {
						f.pairTab[uint16(a)<<8|uint16(b)] = 1
					}
				}
			}
			st := &f.start[page[k[1]]-1]
			if len(k) == 2 {
				st.pair = id + 1
				f.two[p>>6] |= 1 << (p & 63)
				f.twos = true
				continue
			}
			h := triHash(uint32(k[0])<<16 | uint32(k[1])<<8 | uint32(k[2]))
			f.tri[h>>6] |= 1 << (h & 63)
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
// or -1. It goes byte by byte, not by pairMask's blocks as each does: a
// search that stops at a hit near from (the windower's next window, text
// dense with keywords) would gather bits for places it never reaches —
// BenchmarkNext ran a third slower so — and on sparse text (misconfig's
// words) the blocks measured no faster.
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

// blockLen is how many places pairMask tests at once.
const blockLen = 64

// pairMask returns a bit for each place i in raw[base:base+blockLen]
// (bit i-base) where some literal starts with the pair raw[i], raw[i+1]
// in either case, for base+1 < len(raw). The bits are gathered without a
// branch, from a byte per pair (no lower-casing, no variable shift), and
// the places then taken from the mask: a fifth of the places in code pass
// the pair, at random, and a branch per place, mispredicted on that many,
// with the look-ups of the pair's starts behind it, made the pass 4.6 ns a
// byte on the ML tree's text with the secrets check's 427 literals; with
// the mask and mayStart, ≈ 30 % less (Each over that text; BenchmarkEach,
// dense with hits, ≈ 15 %).
func pairMask[T string | []byte](f *Finder, raw T, base int) uint64 {
	end := min(base+blockLen, len(raw)-1) // the last place with a pair
	t := f.pairTab
	var m uint64
	a := uint16(raw[base]) << 8
	for i := base; i < end; i++ {
		b := uint16(raw[i+1])
		m = m<<1 | uint64(t[a|b])
		a = b << 8
	}
	// The first place is the highest bit: turn it around.
	return bits.Reverse64(m) >> (blockLen - (end - base))
}

// mayStart reports whether a keyword may start at i, whose pair p passed
// the pair's table: its first three bytes' hash (most places that pass the
// pair fail it, without the look-ups of startsOf), or a keyword of two.
func mayStart[T string | []byte](f *Finder, raw T, i int, p uint16) bool {
	if f.twos && f.two[p>>6]>>(p&63)&1 != 0 {
		return true
	}
	if i+2 >= len(raw) {
		return false
	}
	h := triHash(uint32(p)<<8 | uint32(lowerTable[raw[i+2]]))
	return f.tri[h>>6]>>(h&63)&1 != 0
}

// triBits is the size of the hash of a keyword's first three bytes.
const triBits = 16

// triHash hashes three bytes, a<<16 | b<<8 | c, to triBits bits.
func triHash(v uint32) uint32 { return v * 0x9E3779B1 >> (32 - triBits) }

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
	if f.ones {
		eachWithOnes(f, raw, hit)
		return
	}
	for base := 0; base+1 < len(raw); base += blockLen {
		m := pairMask(f, raw, base)
		for m != 0 {
			i := base + bits.TrailingZeros64(m)
			m &= m - 1
			p := uint16(lowerTable[raw[i]])<<8 | uint16(lowerTable[raw[i+1]])
			if !mayStart(f, raw, i, p) {
				continue
			}
			st := f.startsOf(p)
			if st.pair != 0 {
				hit(i, st.pair-1)
			}
			if i+2 == len(raw) || !st.goesOn(lowerTable[raw[i+2]]) {
				continue
			}
			for k, t := range st.tails {
				if hasFoldedPrefix(raw[i+2:], t) {
					hit(i, st.ids[k])
				}
			}
		}
	}
}

// eachWithOnes is each for a finder with one-byte literals.
func eachWithOnes[T string | []byte](f *Finder, raw T, hit func(at int, id int32)) {
	var a uint16
	if len(raw) > 0 {
		a = uint16(lowerTable[raw[0]]) << 8
	}
	for i := 0; i < len(raw); i++ {
		if id := f.one[lowerTable[raw[i]]]; id != 0 {
			hit(i, id-1)
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

// caseOf returns the bytes that lower-case to c.
func caseOf(c byte) []byte {
	if 'a' <= c && c <= 'z' {
		return []byte{c, c - 'a' + 'A'}
	}
	return []byte{c}
}
