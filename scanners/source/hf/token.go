package hf

import (
	"os"
	"path/filepath"
	"strings"
)

// Token is a Hub access token and where it came from, for messages. The
// value is never printed, logged or put in an error.
type Token struct {
	value string
	// From says where it was found: "HF_TOKEN", "the token file PATH".
	From string
}

// Set reports whether there is a token.
func (t Token) Set() bool { return t.value != "" }

// String hides the value.
func (t Token) String() string {
	if !t.Set() {
		return "no token"
	}
	return "token from " + t.From
}

// NewToken makes a token of value found at from (a library caller's own).
func NewToken(value, from string) Token {
	return Token{value: strings.TrimSpace(value), From: from}
}

// maxTokenFile bounds the token file read.
const maxTokenFile = 4 << 10

// findToken looks the token up as the Hub's own clients do:
// HF_TOKEN, then HUGGING_FACE_HUB_TOKEN, then the file HF_TOKEN_PATH,
// default $HF_HOME/token, HF_HOME defaulting to $XDG_CACHE_HOME/huggingface
// or ~/.cache/huggingface (what `hf auth login` writes).
func findToken(getenv func(string) (string, bool)) Token {
	for _, name := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if v, ok := getenv(name); ok && strings.TrimSpace(v) != "" {
			return NewToken(v, name)
		}
	}
	p, ok := getenv("HF_TOKEN_PATH")
	if !ok || p == "" {
		home := hfHome(getenv)
		if home == "" {
			return Token{}
		}
		p = filepath.Join(home, "token")
	}
	f, err := os.Open(p)
	if err != nil {
		return Token{}
	}
	defer f.Close()
	buf := make([]byte, maxTokenFile)
	n, _ := f.Read(buf)
	v := strings.TrimSpace(string(buf[:n]))
	if v == "" || strings.ContainsAny(v, " \t\r\n") {
		return Token{}
	}
	return NewToken(v, "the token file "+p)
}

// hfHome is HF_HOME, default $XDG_CACHE_HOME/huggingface or
// ~/.cache/huggingface.
func hfHome(getenv func(string) (string, bool)) string {
	if v, ok := getenv("HF_HOME"); ok && v != "" {
		return v
	}
	if v, ok := getenv("XDG_CACHE_HOME"); ok && v != "" {
		return filepath.Join(v, "huggingface")
	}
	home, ok := getenv("HOME")
	if !ok || home == "" {
		return ""
	}
	return filepath.Join(home, ".cache", "huggingface")
}
