package scannertest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A Seed is one file the conformance test scans: Data as the file at Path
// (slash-separated) of a directory target. Seeds with the same Target are
// files of one target, so that checks see their neighbours; a seed with no
// Target is a target of its own.
type Seed struct {
	Target string
	Path   string
	Data   []byte
}

// Files returns a seed for each of data scanned as each of paths, every
// one a target of its own.
func Files(paths []string, data ...[]byte) []Seed {
	var out []Seed
	for _, d := range data {
		for _, p := range paths {
			out = append(out, Seed{Path: p, Data: d})
		}
	}
	return out
}

// DirSeeds returns every regular file under dir as a seed of one target
// named after dir, such as a fixtures directory.
func DirSeeds(t testing.TB, dir string) []Seed {
	t.Helper()
	var out []Seed
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, Seed{Target: dir, Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		t.Fatalf("seeds from %s: %v", dir, err)
	}
	if len(out) == 0 {
		t.Fatalf("seeds from %s: no files", dir)
	}
	return out
}

// FuzzInputs returns the seed inputs of the fuzz target fuzzName, declared
// in file (a _test.go file of the package under test): the arguments of
// its f.Add calls that are constant strings or []byte conversions of them,
// directly or through a range over a slice literal, then its seed corpus
// in testdata/fuzz/fuzzName. Each input holds one value per argument of the
// fuzz function. Computed seeds (f.Add(helper(x))) cannot be read from the
// source: pass them to Conformance yourself. It fails the test when it
// finds no input at all.
func FuzzInputs(t testing.TB, file, fuzzName string) [][]any {
	t.Helper()
	ins, err := addSeeds(file, fuzzName)
	if err != nil {
		t.Fatalf("seeds of %s: %v", fuzzName, err)
	}
	corpus, err := ReadCorpus(filepath.Join("testdata", "fuzz", fuzzName))
	if err != nil {
		t.Fatalf("seeds of %s: %v", fuzzName, err)
	}
	ins = append(ins, corpus...)
	if len(ins) == 0 {
		t.Fatalf("seeds of %s: no constant f.Add seed in %s and no corpus in testdata/fuzz/%s", fuzzName, file, fuzzName)
	}
	return ins
}

// FuzzFiles returns the inputs of a fuzz target that takes one []byte or
// string (FuzzInputs) as seeds scanned as each of paths.
func FuzzFiles(t testing.TB, file, fuzzName string, paths ...string) []Seed {
	t.Helper()
	var data [][]byte
	for _, in := range FuzzInputs(t, file, fuzzName) {
		if len(in) != 1 {
			t.Fatalf("seeds of %s: an input has %d values, want one []byte or string", fuzzName, len(in))
		}
		b, ok := asBytes(in[0])
		if !ok {
			t.Fatalf("seeds of %s: an input is a %T, want []byte or string", fuzzName, in[0])
		}
		data = append(data, b)
	}
	return Files(paths, data...)
}

func asBytes(v any) ([]byte, bool) {
	switch v := v.(type) {
	case []byte:
		return v, true
	case string:
		return []byte(v), true
	}
	return nil, false
}

// addSeeds reads the constant f.Add arguments of fuzzName in file.
func addSeeds(file, fuzzName string) ([][]any, error) {
	af, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	for _, d := range af.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Name.Name != fuzzName || fd.Body == nil {
			continue
		}
		params := fd.Type.Params.List
		if len(params) != 1 || len(params[0].Names) != 1 {
			break
		}
		x := &addExtractor{f: params[0].Names[0].Name}
		x.walk(fd.Body, nil)
		return x.out, nil
	}
	return nil, &os.PathError{Op: "find func", Path: file + ": " + fuzzName, Err: os.ErrNotExist}
}

type addExtractor struct {
	f   string // the *testing.F parameter
	out [][]any
}

// walk collects f.Add calls under n; env binds the value variables of
// enclosing ranges over slice literals.
func (x *addExtractor) walk(n ast.Node, env map[string]any) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.RangeStmt:
			v, ok := n.Value.(*ast.Ident)
			lit, isLit := n.X.(*ast.CompositeLit)
			if !ok || !isLit {
				return true
			}
			for _, e := range lit.Elts {
				if val, ok := constValue(e, env); ok {
					inner := maps.Clone(env)
					if inner == nil {
						inner = map[string]any{}
					}
					inner[v.Name] = val
					x.walk(n.Body, inner)
				}
			}
			return false
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Add" || !isIdent(sel.X, x.f) {
				return true
			}
			var vals []any
			for _, a := range n.Args {
				v, ok := constValue(a, env)
				if !ok {
					return false // computed: not readable here
				}
				vals = append(vals, v)
			}
			x.out = append(x.out, vals)
			return false
		}
		return true
	})
}

// constValue evaluates a string literal, a concatenation of them, a range
// variable bound in env, or a []byte or string conversion of one.
func constValue(e ast.Expr, env map[string]any) (any, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return nil, false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.Ident:
		v, ok := env[e.Name]
		return v, ok
	case *ast.ParenExpr:
		return constValue(e.X, env)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return nil, false
		}
		a, ok1 := constValue(e.X, env)
		b, ok2 := constValue(e.Y, env)
		as, ok3 := a.(string)
		bs, ok4 := b.(string)
		return as + bs, ok1 && ok2 && ok3 && ok4
	case *ast.CallExpr:
		if len(e.Args) != 1 {
			return nil, false
		}
		v, ok := constValue(e.Args[0], env)
		if !ok {
			return nil, false
		}
		b, ok := asBytes(v)
		switch {
		case !ok:
			return nil, false
		case isByteSlice(e.Fun):
			return b, true
		case isIdent(e.Fun, "string"):
			return string(b), true
		}
	}
	return nil, false
}
