// Package jsontok reads JSON one token at a time as encoding/json's
// Decoder.Token does — the same tokens, the same input offsets, io.EOF where
// it returns io.EOF — on jsontext's scanner (github.com/go-json-experiment/json,
// the encoding/json/v2 prototype), which reads a token without reflection or
// an allocation per token and skips a value without decoding it.
//
// The notebook walkers (scanners/secrets, scanners/pins) were written
// against Decoder.Token, whose cost is most of a notebook's: this keeps
// their reports the same (FuzzSameAsEncodingJSON compares the two on
// arbitrary input) at a fraction of the cost, and lets them skip what they
// never read (base64 images, outputs) without unquoting it.
//
// One difference: nesting deeper than jsontext's limit (10,000 levels) is an
// error, where Decoder.Token has none. A notebook that deep is no notebook:
// Jupyter's reader (Python's json) gives up at about a thousand.
package jsontok

import (
	"bytes"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Kind is what a token is: '{', '}', '[', ']', '"' (a string), '0' (a
// number), 't', 'f' or 'n' (the literals). 0 is no token.
type Kind byte

// Token is one token. Str is a string's unquoted value (invalid UTF-8 and
// lone surrogates replaced by U+FFFD, as encoding/json does) or a number's
// or literal's text.
type Token struct {
	Kind Kind
	Str  string
}

// Decoder reads the tokens of data: any number of top-level values.
type Decoder struct {
	d    *jsontext.Decoder
	data []byte
	err  error
}

// New returns a Decoder over data, which it does not copy.
func New(data []byte) *Decoder {
	// Duplicate names and invalid UTF-8 are accepted, as encoding/json
	// accepts them.
	return &Decoder{
		d:    jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)),
		data: data,
	}
}

// Next returns the next token. At the end of the input it returns io.EOF
// when the input ends between tokens — also inside an unclosed object or
// array, as encoding/json's Decoder.Token does — and another error when it
// ends inside a token or the JSON is not valid.
func (d *Decoder) Next() (Token, error) {
	if d.err != nil {
		return Token{}, d.err
	}
	t, err := d.d.ReadToken()
	if err != nil {
		return Token{}, d.fail(err)
	}
	k := Kind(t.Kind())
	switch k {
	case '"', '0':
		return Token{Kind: k, Str: t.String()}, nil
	case 't':
		return Token{Kind: k, Str: "true"}, nil
	case 'f':
		return Token{Kind: k, Str: "false"}, nil
	case 'n':
		return Token{Kind: k, Str: "null"}, nil
	}
	return Token{Kind: k}, nil
}

// Peek returns the kind of the next token without reading it, or 0 when
// there is none (the end, or an error that Next or Skip then returns).
func (d *Decoder) Peek() Kind {
	if d.err != nil {
		return 0
	}
	return Kind(d.d.PeekKind())
}

// Skip reads the next value whole — a string, a number, a literal, or an
// object or array with everything in it — without unquoting its strings.
// Its errors are those Next would return while reading the value's tokens
// (it reads them, so that an input cut inside the value ends as Next says).
func (d *Decoder) Skip() error {
	if k := d.Peek(); k == '}' || k == ']' {
		return errNoValue
	}
	depth := 0
	for {
		if d.err != nil {
			return d.err
		}
		t, err := d.d.ReadToken()
		if err != nil {
			return d.fail(err)
		}
		switch t.Kind() {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
		if depth <= 0 {
			return nil
		}
	}
}

var errNoValue = errors.New("jsontok: Skip where no value starts")

// Offset is the input offset just after the last token or value read.
func (d *Decoder) Offset() int64 { return d.d.InputOffset() }

// fail keeps the error that ends the input. jsontext reports a value left
// open at the end as an unexpected end; encoding/json's Token returns io.EOF
// there as long as no token was cut (what is left after the last token is
// only space and separators), and so does Next.
func (d *Decoder) fail(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) && onlySeparators(d.data[d.d.InputOffset():]) {
		err = io.EOF
	}
	d.err = err
	return err
}

// onlySeparators reports whether b holds nothing but JSON whitespace, commas
// and colons.
func onlySeparators(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r', ',', ':':
		default:
			return false
		}
	}
	return true
}
