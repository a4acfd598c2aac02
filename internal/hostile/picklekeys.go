package hostile

// Issue 37, item 1 (secrets): pickles of training arguments and configs,
// written the way CPython's pickler lays them out (memo puts, GETs for
// repeated strings, SETITEM for one item and MARK … SETITEMS for more,
// objects rebuilt with NEWOBJ or copyreg._reconstructor and BUILD), so that
// a test can plant a credential under a key path without a real checkpoint.
// (In a file of its own, beside hostile.go, so that engineers appending
// generators there never share a hunk.)

import (
	"bytes"
	"encoding/binary"
)

// PDict is a dict for Pickle: its keys (strings) and values alternating,
// in order. A value is a string, int, bool, nil, PDict, PList, PNamespace,
// POmega or POrdered.
type PDict []any

// PList is a list for Pickle.
type PList []any

// PNamespace is an argparse.Namespace with these attributes.
type PNamespace PDict

// POmega is an omegaconf.DictConfig: its "_content" holds an AnyNode per
// scalar (the value in the node's "_val") and a DictConfig per dict.
type POmega PDict

// POrdered is a collections.OrderedDict (REDUCE, then SETITEMS on the
// object), as state dicts are.
type POrdered PDict

// Pickle returns v pickled with protocol 2 (NEWOBJ for objects) or, with
// reconstructor set, with copyreg._reconstructor as protocol 0 and 1 do.
func Pickle(v any, reconstructor bool) []byte {
	p := &pickler{memo: map[string]int{}, recon: reconstructor}
	p.b.WriteString("\x80\x02")
	p.value(v, 0)
	p.b.WriteByte('.')
	return p.b.Bytes()
}

type pickler struct {
	b     bytes.Buffer
	memo  map[string]int // strings and globals already written
	n     int
	recon bool
}

func (p *pickler) put() {
	if p.n < 256 {
		p.b.WriteByte('q')
		p.b.WriteByte(byte(p.n))
	} else {
		p.b.WriteByte('r')
		binary.Write(&p.b, binary.LittleEndian, uint32(p.n))
	}
	p.n++
}

func (p *pickler) get(i int) {
	if i < 256 {
		p.b.WriteByte('h')
		p.b.WriteByte(byte(i))
		return
	}
	p.b.WriteByte('j')
	binary.Write(&p.b, binary.LittleEndian, uint32(i))
}

func (p *pickler) str(s string) {
	if i, ok := p.memo["s:"+s]; ok {
		p.get(i)
		return
	}
	p.b.WriteByte('X')
	binary.Write(&p.b, binary.LittleEndian, uint32(len(s)))
	p.b.WriteString(s)
	p.memo["s:"+s] = p.n
	p.put()
}

func (p *pickler) global(module, name string) {
	if i, ok := p.memo["g:"+module+"."+name]; ok {
		p.get(i)
		return
	}
	p.b.WriteString("c" + module + "\n" + name + "\n")
	p.memo["g:"+module+"."+name] = p.n
	p.put()
}

// object writes cls rebuilt with the state dict that state returns given
// the object's memo index (BUILD).
func (p *pickler) object(module, name string, state func(me int) PDict, self int) {
	if p.recon {
		p.global("copy_reg", "_reconstructor")
		p.b.WriteByte('(')
		p.global(module, name)
		p.global("__builtin__", "object")
		p.b.WriteString("NtR")
	} else {
		p.global(module, name)
		p.b.WriteString(")\x81")
	}
	me := p.n
	p.put()
	p.dict(state(me), me)
	p.b.WriteByte('b')
}

func (p *pickler) items(d PDict, self int) {
	switch len(d) / 2 {
	case 0:
	case 1:
		p.str(d[0].(string))
		p.value(d[1], self)
		p.b.WriteByte('s')
	default:
		p.b.WriteByte('(')
		for i := 0; i+1 < len(d); i += 2 {
			p.str(d[i].(string))
			p.value(d[i+1], self)
		}
		p.b.WriteByte('u')
	}
}

func (p *pickler) dict(d PDict, self int) {
	p.b.WriteByte('}')
	p.put()
	p.items(d, self)
}

// value writes v; self is the memo index of the DictConfig being written
// (an OmegaConf node's "_parent").
func (p *pickler) value(v any, self int) {
	switch v := v.(type) {
	case string:
		p.str(v)
	case int:
		p.b.WriteByte('J')
		binary.Write(&p.b, binary.LittleEndian, int32(v))
	case PDict:
		p.dict(v, self)
	case PList:
		p.b.WriteByte(']')
		p.put()
		if len(v) > 0 {
			p.b.WriteByte('(')
			for _, it := range v {
				p.value(it, self)
			}
			p.b.WriteByte('e')
		}
	case PNamespace:
		p.object("argparse", "Namespace", func(int) PDict { return PDict(v) }, self)
	case POrdered:
		p.global("collections", "OrderedDict")
		p.b.WriteString(")R")
		p.put()
		p.items(PDict(v), self)
	case POmega:
		p.object("omegaconf.dictconfig", "DictConfig", func(me int) PDict {
			var content PDict
			for i := 0; i+1 < len(v); i += 2 {
				switch v[i+1].(type) {
				case POmega:
					content = append(content, v[i], v[i+1])
				default:
					content = append(content, v[i], omegaNode{v[i].(string), v[i+1], me})
				}
			}
			return PDict{"_metadata", omegaMeta{""}, "_parent", omegaParent(self), "_content", content}
		}, self)
	case omegaNode:
		p.object("omegaconf.nodes", "AnyNode", func(int) PDict {
			return PDict{"_metadata", omegaMeta{v.key}, "_parent", omegaParent(v.parent), "_val", v.val}
		}, self)
	case omegaMeta:
		p.object("omegaconf.base", "Metadata", func(int) PDict {
			return PDict{"object_type", nil, "optional", true, "key", v.key, "flags", PDict{}}
		}, self)
	case omegaParent:
		if v <= 0 {
			p.b.WriteByte('N')
		} else {
			p.get(int(v))
		}
	case bool:
		if v {
			p.b.WriteByte(0x88)
		} else {
			p.b.WriteByte(0x89)
		}
	default:
		p.b.WriteByte('N')
	}
}

type omegaNode struct {
	key    string
	val    any
	parent int
}

type omegaMeta struct{ key string }

type omegaParent int
