package secrets

import (
	"regexp/syntax"
	"strings"
)

// Needed literals.
//
// gitleaks runs a rule's regexp when one of its keywords occurs in the
// text, but a keyword is often much looser than the regexp: "hf_" selects
// the Hugging Face rules for every HF_HOME=, though their regexps need a
// lower-case "hf_" or "api_". Lazy rules compile, per input, only the rules
// whose keywords it holds; compiling a regexp that cannot match was most of
// what a clean sbatch job's secrets check did (the legacy Hugging Face
// rule's counted repeats alone ≈ 0.4 ms). So the generated index also holds
// each rule's needed literals — one of them occurs in every match — and a
// rule none of whose literals occurs is not compiled: it could find
// nothing, so the findings are the same.

// need is a literal every match of a regexp holds, as written or, with
// fold, with its ASCII letters in either case (then lit is lower case).
type need struct {
	lit  string
	fold bool
}

// maxNeeds bounds the literals kept for one regexp (an alternation of
// literal values, such as the OAuth examples ours allows, has a few dozen).
const maxNeeds = 32

// maxRepeatNeed bounds the literal a counted repeat of one spells out.
const maxRepeatNeed = 16

// needs returns literals one of which every match of pattern (a Go regexp,
// as gitleaks compiles it) holds, or false when it cannot tell.
func needs(pattern string) ([]need, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	return needsOf(re)
}

func needsOf(re *syntax.Regexp) ([]need, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r >= 0x80 {
				return nil, false // ASCII only: no question of encodings or Unicode folding
			}
		}
		n := need{lit: string(re.Rune), fold: re.Flags&syntax.FoldCase != 0}
		if n.fold {
			n.lit = strings.ToLower(n.lit)
		}
		return []need{n}, true
	case syntax.OpCapture, syntax.OpPlus:
		return needsOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			break
		}
		ns, ok := needsOf(re.Sub[0])
		if ok && len(ns) == 1 && re.Sub[0].Op == syntax.OpLiteral && re.Min > 1 && re.Min*len(ns[0].lit) <= maxRepeatNeed {
			// x{6,} needs xxxxxx: Min copies of the literal in a row.
			ns[0].lit = strings.Repeat(ns[0].lit, re.Min)
		}
		return ns, ok
	case syntax.OpConcat:
		var best []need
		for _, sub := range re.Sub {
			if n, ok := needsOf(sub); ok && (best == nil || better(n, best)) {
				best = n
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []need
		for _, sub := range re.Sub {
			n, ok := needsOf(sub)
			if !ok {
				return nil, false
			}
			all = append(all, n...)
		}
		if len(all) > maxNeeds {
			return nil, false
		}
		return all, true
	}
	return nil, false
}

// better reports whether needs a rule out more text than b: a longer
// shortest literal, then fewer literals.
func better(a, b []need) bool {
	if sa, sb := shortest(a), shortest(b); sa != sb {
		return sa > sb
	}
	return len(a) < len(b)
}

func shortest(ns []need) int {
	n := -1
	for _, x := range ns {
		if n < 0 || len(x.lit) < n {
			n = len(x.lit)
		}
	}
	return n
}

// present reports whether raw (lower: raw lower-cased) holds one of ns.
// Text with a character that Go's case folding takes to an ASCII letter
// (ſ, K, İ) holds every folded literal.
func present(ns []need, raw, lower string) bool {
	for _, n := range ns {
		if n.fold {
			if strings.Contains(lower, n.lit) || foldsOutsideASCII(raw) {
				return true
			}
		} else if strings.Contains(raw, n.lit) {
			return true
		}
	}
	return false
}
