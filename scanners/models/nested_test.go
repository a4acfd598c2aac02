package models

import (
	"fmt"
	"slices"
	"testing"
)

func TestSourceRefs(t *testing.T) {
	cases := []struct {
		src  string
		want []string // module.name, "+" when called
	}{
		{"import os as o\no.system('true')\n", []string{"os", "os.system+"}},
		{"from subprocess import call as c\nc(['x'])", []string{"subprocess.call", "subprocess.call+"}},
		{"__import__('os').popen('id').read()", []string{"os.popen+"}},
		{"import importlib; importlib.import_module('pty').spawn('sh')", []string{"importlib", "pty.spawn+"}},
		{"getattr(posix, 'system')('x')", []string{"posix.system+"}},
		{"exec(compile(s, 'x', 'exec'))", []string{"builtins.exec+", "builtins.compile+"}},
		{"# os.system('x') in a comment\nprint('os.system')", nil},
		{"x = '''\nimport os\n'''\n", nil},
		{"import numpy as np\nnp.load('x')", []string{"numpy", "numpy.load+"}},
	}
	for _, c := range cases {
		refs, _, _ := sourceRefs(c.src)
		var got []string
		for _, r := range refs {
			q := r.module
			if r.name != "" {
				q += "." + r.name
			}
			if r.call {
				q += "+"
			}
			got = append(got, q)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.src, got, c.want)
		}
	}
}

func TestUnwrap(t *testing.T) {
	cases := []struct {
		in    string
		steps string
		known bool
	}{
		{"80049510000000000000007d942e", "[hex]", true},
		{"ODAwNDk1MTAwMDAwMDAwMDAwMDAwMDdkOTQyZQ==", "[base64 hex]", true},
		{"the quick brown fox jumps over", "[]", false},
		{"layer.0.attention.self.query.weight", "[]", false},
		{"0123456789abcdef0123456789abcdef", "[hex]", false},
	}
	for _, c := range cases {
		pl, _ := unwrap([]byte(c.in))
		if got := fmt.Sprint(pl.steps); got != c.steps || (pl.f != fmtUnknown) != c.known {
			t.Errorf("%q: steps %s known %v, want %s %v", c.in, got, pl.f != fmtUnknown, c.steps, c.known)
		}
	}
}
