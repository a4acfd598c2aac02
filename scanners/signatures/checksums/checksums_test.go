package checksums

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func coreutils(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v: %v", args, err)
		}
		t.Skipf("%v: %v", args, err)
	}
	return out
}

func TestVerifyAgainstSha256sum(t *testing.T) {
	for _, mode := range [][]string{
		{"sha256sum"}, {"sha256sum", "--binary"}, {"sha256sum", "--tag"}, {"sha512sum"}, {"sha512sum", "--tag"},
	} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				"a.bin": "alpha", "sub/b.bin": "bravo", "we(ird) (x).bin": "charlie", "new\nline": "delta", "empty": "",
			})
			args := append(append([]string{}, mode...), "a.bin", "sub/b.bin", "we(ird) (x).bin", "new\nline", "empty")
			man := coreutils(t, dir, args...)
			entries, errs := Parse("SUMS", man, AlgorithmFor(mode[0]))
			if len(errs) != 0 || len(entries) != 5 {
				t.Fatalf("parse: %d entries, errors %v\n%s", len(entries), errs, man)
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			for _, r := range NewHasher(root.FS()).Verify(context.Background(), ".", entries) {
				if r.Status != OK {
					t.Errorf("%q: %s %s", r.Name, r.Status, r.Reason)
				}
			}
			// Tamper with one file: only it fails.
			writeFiles(t, dir, map[string]string{"sub/b.bin": "bravO"})
			for _, r := range NewHasher(root.FS()).Verify(context.Background(), ".", entries) {
				if want := map[bool]Status{true: Mismatch, false: OK}[r.Name == "sub/b.bin"]; r.Status != want {
					t.Errorf("after tamper %q: %s, want %s", r.Name, r.Status, want)
				}
			}
		})
	}
}

func TestVerifyConfined(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret": "s"})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"in/ok": "ok", "in/x": "x"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "in", "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("x", filepath.Join(dir, "in", "link-in")); err != nil {
		t.Fatal(err)
	}
	sum := func(s string) string {
		es, _ := Parse("x.sha256", []byte(s), "sha256")
		return es[0].Digest
	}
	_ = sum
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	h := NewHasher(root.FS())
	d, _, err := h.Sum(context.Background(), "in/ok", "sha256")
	if err != nil {
		t.Fatal(err)
	}
	dx, _, _ := h.Sum(context.Background(), "in/x", "sha256")
	tests := []struct {
		name string
		want Status
	}{
		{"ok", OK},
		{"../in/ok", Rejected},
		{"/etc/hostname", Rejected},
		{`sub\ok`, Rejected},
		{"C:/x", Rejected},
		{"link-out", Rejected},
		{"link-in", OK},
		{"gone", Missing},
		{".", Rejected},
	}
	var es []Entry
	for _, tt := range tests {
		dig := d
		if tt.name == "link-in" {
			dig = dx
		}
		es = append(es, Entry{Name: tt.name, Algorithm: "sha256", Digest: dig})
	}
	for i, r := range h.Verify(context.Background(), "in", es) {
		if r.Status != tests[i].want {
			t.Errorf("%q: %s (%s), want %s", r.Name, r.Status, r.Reason, tests[i].want)
		}
	}
}

func TestParse(t *testing.T) {
	d := strings.Repeat("ab", 32)
	tests := []struct {
		name, in string
		want     []Entry
		errs     int
	}{
		{"gnu text", d + "  a b\n", []Entry{{Name: "a b", Algorithm: "sha256", Digest: d, Line: 1}}, 0},
		{"gnu binary crlf", d + " *x\r\n", []Entry{{Name: "x", Algorithm: "sha256", Digest: d, Line: 1}}, 0},
		{"bsd", "SHA256 (f (1)) = " + strings.ToUpper(d) + "\n", []Entry{{Name: "f (1)", Algorithm: "sha256", Digest: d, Line: 1}}, 0},
		{"escaped", `\` + d + `  a\\b\nc` + "\n", []Entry{{Name: "a\\b\nc", Algorithm: "sha256", Digest: d, Line: 1}}, 0},
		{"bad escape", `\` + d + `  a\tb`, nil, 1},
		{"short", "abcd  x\n", nil, 1},
		{"comment and blank", "# hi\n\n" + d + "  y", []Entry{{Name: "y", Algorithm: "sha256", Digest: d, Line: 3}}, 0},
		{"no name", d + "\n", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Parse("SHA256SUMS", []byte(tt.in), "")
			if len(errs) != tt.errs {
				t.Errorf("errors %v, want %d", errs, tt.errs)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("got %+v, want %+v", got[i], tt.want[i])
				}
			}
		})
	}
	// A bare digest in a sidecar names the file beside it.
	got, _ := Parse("dir/w.bin.sha256", []byte(d+"\n"), "sha256")
	if len(got) != 1 || got[0].Name != "w.bin" {
		t.Errorf("sidecar: %+v", got)
	}
}

func TestLFSPointer(t *testing.T) {
	oid := strings.Repeat("4d", 32)
	tests := []struct {
		in string
		ok bool
	}{
		{"version https://git-lfs.github.com/spec/v1\noid sha256:" + oid + "\nsize 12345\n", true},
		{"version https://git-lfs.github.com/spec/v1\next-0-foo sha256:x\noid sha256:" + oid + "\nsize 0\n", true},
		{"version https://git-lfs.github.com/spec/v1\nsize 12345\noid sha256:" + oid + "\n", false},
		{"version https://git-lfs.github.com/spec/v1\noid sha256:" + oid + "\nsize 012\n", false},
		{"version https://example/spec/v9\noid sha256:" + oid + "\nsize 1\n", false},
		{"hello", false},
	}
	for _, tt := range tests {
		if _, ok := ParseLFSPointer([]byte(tt.in)); ok != tt.ok {
			t.Errorf("%q: ok=%v, want %v", tt.in, ok, tt.ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(strings.Repeat("ab", 32) + "  a\n"))
	f.Add([]byte("SHA512 (x) = 00\n\\" + strings.Repeat("0", 64) + " *a\\nb"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, _ := Parse("w.sha256", data, "")
		for _, e := range es {
			if len(e.Digest) != hexLen[e.Algorithm] {
				t.Fatalf("bad entry %+v", e)
			}
			_, _ = SafeJoin(".", e.Name)
		}
		ParseLFSPointer(data)
	})
}

// TestVerifyConfinedAnyFS: the Hasher refuses symlinks out of the root
// itself, also through a file system that would follow them (os.DirFS)
// and one that is not on disk (fstest.MapFS), and reads none of them.
func TestVerifyConfinedAnyFS(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret": "s"})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"in/ok": "ok", "in/sub/x": "x"})
	for name, target := range map[string]string{
		"in/abs":     filepath.Join(outside, "secret"),
		"in/up":      "../../" + filepath.Base(outside) + "/secret",
		"in/subup":   "sub/../../..",
		"in/link-in": "sub/x",
		"in/dirlink": "sub",
		"in/hop":     "dirlink/../../in/ok",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	sha := func(s string) string {
		h, _ := NewHash("sha256")
		h.Write([]byte(s))
		return hexString(h.Sum(nil))
	}
	tests := []struct {
		name, body string
		want       Status
	}{
		{"ok", "ok", OK},
		{"abs", "s", Rejected},
		{"up", "s", Rejected},
		{"subup/x", "", Rejected},
		{"link-in", "x", OK},
		{"dirlink/x", "x", OK},
		{"hop", "ok", OK},
	}
	var es []Entry
	for _, tt := range tests {
		es = append(es, Entry{Name: tt.name, Algorithm: "sha256", Digest: sha(tt.body)})
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, fsys := range map[string]fs.FS{"os.Root": root.FS(), "os.DirFS": os.DirFS(dir)} {
		t.Run(name, func(t *testing.T) {
			h := NewHasher(fsys)
			for i, r := range h.Verify(context.Background(), "in", es) {
				if r.Status != tests[i].want {
					t.Errorf("%q: %s (%s), want %s", r.Name, r.Status, r.Reason, tests[i].want)
				}
			}
			if n, want := h.BytesRead(), int64(len("ok")+len("x")+len("x")+len("ok")); n != want {
				t.Errorf("read %d bytes, want %d: nothing outside the root", n, want)
			}
			if _, err := h.Open("in/up"); err == nil || !strings.Contains(err.Error(), "escapes") {
				t.Errorf("Open(in/up) = %v, want an escape", err)
			}
		})
	}
	m := fstest.MapFS{
		"w/a.bin":  {Data: []byte("ok")},
		"w/link":   {Data: []byte("a.bin"), Mode: fs.ModeSymlink},
		"w/escape": {Data: []byte("../../etc/passwd"), Mode: fs.ModeSymlink},
	}
	res := NewHasher(m).Verify(context.Background(), "w", []Entry{
		{Name: "link", Algorithm: "sha256", Digest: sha("ok")},
		{Name: "escape", Algorithm: "sha256", Digest: sha("ok")},
	})
	if res[0].Status != OK || res[1].Status != Rejected {
		t.Errorf("MapFS: %+v", res)
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
