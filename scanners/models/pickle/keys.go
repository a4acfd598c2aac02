package pickle

import (
	"cmp"
	"slices"
	"strings"
)

// Keys of the strings of a pickle.
//
// A checkpoint's strings are not a list: a training script's arguments
// (argparse.Namespace, Lightning's hyper_parameters, an OmegaConf
// DictConfig) are dicts, and {'wandb': {'api_key': s}} tells a reader what
// s is where s alone does not (a W&B key is 40 hex digits, which only a
// wandb name makes a credential). So the walk keeps, for each container it
// builds, where it sits in the object tree (a keyPath), and when a string
// goes into a dict (SETITEM, SETITEMS, DICT), a list (APPEND, APPENDS,
// LIST) or a tuple, the string's String.Key is that place: the key path of
// the container and the string's own key. The pairing of a key with its
// value is the unpickler's own (the operands of SETITEM/SETITEMS, however
// far apart they were pushed, memo GETs included); only where a container
// sits is read from the stack when it is made, which is how picklers
// write nested objects (the key, then the value built in place):
//
//   - right after a MARK, a container belongs to what is under the MARK (a
//     list's item, a BUILD state tuple, a dict's first key);
//   - a string right after a dict that has no items yet and was made
//     where it stands (not a memo GET of a parent) is that dict's key
//     (CPython writes a one-item dict as key, value, SETITEM, no MARK);
//   - otherwise an odd place after the MARK above a dict (or an object
//     filled by SETITEMS, OrderedDict) is a value, the string before it
//     its key;
//   - a container made with an object on top (BUILD's state dict: a
//     Namespace's __dict__, copyreg._reconstructor's) is the object's.
//
// OmegaConf's nodes keep their children in "_content" and a value node its
// value in "_val": those segments are left out, so that a DictConfig reads
// as the YAML it came from. Bounded: the last maxKeyDepth segments, each at
// most maxKeyLen bytes; a string is keyed once (the first key it is set
// under), and only while it is among the strings not yet handed over.
type keyPath struct {
	up  *keyPath
	key string
	str string // String, once made (the items of a list share it)
}

const (
	maxKeyDepth = 8
	maxKeyLen   = 64
)

// childPath is the place of a value under key k of a container at up.
// Keys that are not strings (ints, tuples) add no segment.
func childPath(up *keyPath, k *Value) *keyPath {
	if k == nil || k.Kind != KStr || k.Str == "" {
		return up
	}
	return &keyPath{up: up, key: keySegment(k.Str)}
}

// keySegment is a key as a path segment: bytes other than letters, digits,
// '_' and '-' become '_', at most maxKeyLen of them.
func keySegment(k string) string {
	if len(k) > maxKeyLen {
		k = k[:maxKeyLen]
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b := []byte(k)
			for j := i; j < len(b); j++ {
				if c := b[j]; !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
					b[j] = '_'
				}
			}
			return string(b)
		}
	}
	return k
}

// String is the dotted path, without OmegaConf's "_content" and "_val".
func (p *keyPath) String() string {
	if p.str == "" {
		p.str = p.render()
	}
	return p.str
}

func (p *keyPath) render() string {
	var segs [maxKeyDepth]string
	n := 0
	for ; p != nil && n < maxKeyDepth; p = p.up {
		if p.key == "_content" || p.key == "_val" {
			continue
		}
		segs[n] = p.key
		n++
	}
	if n == 1 {
		return segs[0]
	}
	var b strings.Builder
	for i := n - 1; i >= 0; i-- {
		b.WriteString(segs[i])
		if i > 0 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func dictLike(v *Value) bool { return v.Kind == KDict || v.Kind == KObject }

// here is the place of a container about to be pushed (see keyPath).
func (w *Walker) here() *keyPath {
	n := len(w.stack)
	if n == 0 {
		return nil
	}
	m := -1
	if len(w.marks) > 0 {
		m = min(w.marks[len(w.marks)-1], n)
	}
	if m == n {
		if m == 0 {
			return nil
		}
		return w.stack[m-1].path
	}
	top := w.stack[n-1]
	lo := max(m, 0)
	if n-2 >= lo && top.Kind == KStr && dictLike(w.stack[n-2]) && !w.stack[n-2].filled && int(w.stack[n-2].at) == n-2 {
		return childPath(w.stack[n-2].path, top)
	}
	if m >= 1 {
		if under := w.stack[m-1]; dictLike(under) {
			if (n-m)%2 == 1 {
				return childPath(under.path, top)
			}
		} else {
			return under.path
		}
	}
	if n-2 >= lo && top.Kind == KStr && dictLike(w.stack[n-2]) {
		return childPath(w.stack[n-2].path, top)
	}
	switch top.Kind {
	case KDict, KList, KObject, KTuple:
		return top.path
	}
	return nil
}

// fill marks a container filled; shared values (frozen placeholders, the
// unknown value of an underflow) are never written.
func fill(v *Value) {
	switch v.Kind {
	case KDict, KList, KSet, KTuple, KObject:
		if !v.frozen {
			v.filled = true
		}
	}
}

// keyed keys the string values of the pairs kv set into container d.
func (w *Walker) keyed(d *Value, kv []*Value) {
	fill(d)
	for i := 0; i+1 < len(kv); i += 2 {
		if v := kv[i+1]; v.Kind == KStr || v.Kind == KBytes {
			w.keyString(v, d.path, kv[i])
		}
	}
}

// listed keys the string items put into list (or tuple) l with l's place.
func (w *Walker) listed(l *Value, items []*Value) {
	fill(l)
	if l.path == nil {
		return
	}
	for _, v := range items {
		if v.Kind == KStr || v.Kind == KBytes {
			w.keyString(v, l.path, nil)
		}
	}
}

// keyedTuple is a tuple of items, placed and with its strings keyed.
func (w *Walker) keyedTuple(items []*Value) *Value {
	t := w.tuple(items)
	t.path, t.at = w.here(), int32(len(w.stack))
	w.listed(t, items)
	return t
}

// keyString sets the key of string v, if it is still among the strings
// not handed over and has none. The strings are kept in the order of
// their offsets (a string value's Int), so v's is found by bisection.
func (w *Walker) keyString(v *Value, up *keyPath, k *Value) {
	ss := w.res.Strings
	if len(v.Str) < w.lim.MinStringLen || len(ss) == 0 || v.Int < ss[0].Offset {
		return
	}
	i, ok := slices.BinarySearchFunc(ss, v.Int, func(s String, off int64) int { return cmp.Compare(s.Offset, off) })
	if !ok || ss[i].Key != "" {
		return
	}
	if k != nil && k.Kind == KStr && k.Str != "" {
		ss[i].Key = (&keyPath{up: up, key: keySegment(k.Str)}).String()
	} else if up != nil {
		ss[i].Key = up.String()
	}
}
