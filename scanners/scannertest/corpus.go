package scannertest

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// corpusHeader is the first line of a seed corpus file.
const corpusHeader = "go test fuzz v1"

// ParseCorpusFile parses one seed corpus file in the format go test writes
// under testdata/fuzz/FuzzName/: the line "go test fuzz v1", then one Go
// conversion a line, one per argument of the fuzz function, such as
// []byte("...") or string("..."). It reads the []byte and string values
// checks' fuzz targets take, and returns an error for any other type.
func ParseCorpusFile(data []byte) ([]any, error) {
	lines := bytes.Split(data, []byte("\n"))
	if string(bytes.TrimSuffix(lines[0], []byte("\r"))) != corpusHeader {
		return nil, fmt.Errorf("not a seed corpus file: first line is not %q", corpusHeader)
	}
	var vals []any
	for i, line := range lines[1:] {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		v, err := parseCorpusValue(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q: %w", i+2, line, err)
		}
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		return nil, errors.New("no values")
	}
	return vals, nil
}

// parseCorpusValue reads []byte("...") or string("...").
func parseCorpusValue(line []byte) (any, error) {
	expr, err := parser.ParseExprFrom(token.NewFileSet(), "", line, 0)
	if err != nil {
		return nil, err
	}
	call, ok := expr.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil, errors.New("want a conversion of one literal, such as []byte(\"...\")")
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return nil, fmt.Errorf("unsupported value %s: only []byte and string are read", types(call.Fun))
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return nil, err
	}
	switch {
	case isByteSlice(call.Fun):
		return []byte(s), nil
	case isIdent(call.Fun, "string"):
		return s, nil
	}
	return nil, fmt.Errorf("unsupported type %s: only []byte and string are read", types(call.Fun))
}

func isByteSlice(e ast.Expr) bool {
	at, ok := e.(*ast.ArrayType)
	return ok && at.Len == nil && (isIdent(at.Elt, "byte") || isIdent(at.Elt, "uint8"))
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// types names a conversion's type for an error message.
func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.ArrayType:
		return "[]" + types(e.Elt)
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	}
	return fmt.Sprintf("%T", e)
}

// ReadCorpus reads every file of one fuzz target's seed corpus directory
// (testdata/fuzz/FuzzName), in name order, one []any of argument values
// per file. A missing directory is an empty corpus.
func ReadCorpus(dir string) ([][]any, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	var out [][]any
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read corpus: %w", err)
		}
		vals, err := ParseCorpusFile(data)
		if err != nil {
			return nil, fmt.Errorf("corpus file %s: %w", p, err)
		}
		out = append(out, vals)
	}
	return out, nil
}
