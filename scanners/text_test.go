package scanners_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf16"

	"github.com/mlwarden/mlwarden/scanners"
)

func TestIsBinary(t *testing.T) {
	random := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.UintN(256))
	}
	var u16 bytes.Buffer
	for _, c := range utf16.Encode([]rune("#!/bin/bash\nexport TOKEN=abc\n")) {
		u16.Write([]byte{byte(c), byte(c >> 8)})
	}
	elf := append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 120)...)
	cases := []struct {
		name   string
		head   []byte
		binary bool
	}{
		{"empty", nil, false},
		{"plain text", []byte("#!/bin/bash\necho hi\n"), false},
		{"a NUL in front of a script", []byte("x\x00\n#!/bin/bash\nexport HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH\n"), false},
		{"a few NULs in a long text", append(bytes.Repeat([]byte("line of text\n"), 100), 0, 0, 0), false},
		{"UTF-8 text with a NUL", []byte("résumé naïve 日本語 text\x00 more text here"), false},
		{"random bytes", random, true},
		{"UTF-16", u16.Bytes(), true},
		{"ELF header", elf, true},
		{"half NULs", bytes.Repeat([]byte{'a', 0}, 100), true},
	}
	for _, c := range cases {
		if got := scanners.IsBinary(c.head); got != c.binary {
			t.Errorf("%s: IsBinary = %v, want %v", c.name, got, c.binary)
		}
	}
}

func TestBase(t *testing.T) {
	for p, want := range map[string]string{
		"dir/Train.PY":                "train.py",
		"dist/app.whl!pkg/config.py":  "config.py",
		"a.zip!conf.env":              "conf.env",
		"logs/run.log.gz!run.log":     "run.log",
		"odd!":                        "odd!",
		"/app/x.tar.gz!b.zip!c/d.yml": "d.yml",
	} {
		if got := scanners.Base(p); got != want {
			t.Errorf("Base(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\nb", []string{"a", "b"}},
		{"a\r\n\nb\n", []string{"a\r", "", "b"}},
		{"\n\n", []string{"", ""}},
	} {
		var got []string
		want := 1
		for n, l := range scanners.Lines([]byte(c.in)) {
			if n != want {
				t.Errorf("Lines(%q): line %d numbered %d", c.in, want, n)
			}
			want++
			got = append(got, string(l))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for n := range scanners.Lines([]byte("a\nb\nc")) {
		if n == 2 {
			break // an early stop ends the walk
		}
	}
}
