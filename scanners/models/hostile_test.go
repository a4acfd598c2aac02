package models

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
	"github.com/mlwarden/mlwarden/internal/unpack"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// scanHostile scans data named name with s and returns the findings and
// whether Scan said the file was not scanned in full.
func scanHostile(t *testing.T, s *Scanner, name string, data []byte) ([]scanners.Finding, bool) {
	t.Helper()
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: name}
	fs, err := scanners.ScanBytes(context.Background(), s, a, data)
	if err != nil && !errors.Is(err, scanners.ErrIncomplete) {
		t.Fatalf("%s: %v", name, err)
	}
	if scannertest.DecoderMissing(fs) {
		t.Skipf("%s: its decoder is not in mlwarden-sbatch's build", name)
	}
	return fs, err != nil
}

func has(fs []scanners.Finding, rule, text string) bool {
	return slices.ContainsFunc(fs, func(f scanners.Finding) bool {
		return f.RuleID == rule && (strings.Contains(f.Message, text) || strings.Contains(f.Evidence, text))
	})
}

// TestHostile: each crafted input of issue 15, made by its generator: what
// crashed the process, exhausted memory, or passed silently is now a
// bounded scan with the right finding, and a limit is an incomplete scan
// (exit 2). Each case has a negative twin where it makes sense.
func TestHostile(t *testing.T) {
	small := New(WithLimits(Limits{MaxMembers: 1000, MaxExpand: 1 << 20}))
	cases := []struct {
		name, file string
		s          *Scanner
		data       func() []byte
		rule, text string // a finding that must be there
		incomplete bool
	}{
		{"7z declares 2^28 files", "x.7z", New(), func() []byte { return hostile.SevenZipFiles(1 << 28) }, "models/unscannable", "more than the member limit", true},
		{"7z coder declares 30 GB of properties", "x.7z", New(), func() []byte { return hostile.SevenZipProps(30 << 30) }, "models/unscannable", "cannot be opened", false},
		{"7z encoded header declares 2^28 files", "x.7z", New(), func() []byte { return hostile.SevenZipEncoded(1 << 28) }, "models/unscannable", "more than the member limit", true},
		{"lzma with a 2 GB dictionary", "x.pkl.lzma", New(), func() []byte { return hostile.LzmaDict(1 << 31) }, "models/unscannable", "dictionary", true},
		{"xz with a 3 GB dictionary", "x.pkl.xz", New(), func() []byte { return hostile.XzDict(39) }, "models/unscannable", "dictionary", true},
		{"safetensors with 10 MiB of bad entries", "m.safetensors", New(), func() []byte { return hostile.Safetensors(10 << 20) }, "models/safetensors-malformed", "more models/safetensors-malformed findings", false},
		{"36 million nested MARKs then posix.system", "x.pkl", New(), func() []byte { return hostile.NestedPickle(36_000_000) }, "models/pickle-dangerous-global", "posix.system", false},
		{"MARK limit then posix.system", "x.pkl", New(), func() []byte { return hostile.NestedPickle(1<<20 + 5<<20) }, "models/pickle-dangerous-global", "posix.system", false},
		{"nested zips: one depth finding", "x.zip", New(), func() []byte { return hostile.NestedZip(16, 5) }, "models/unscannable", "nested deeper", true},
		{"more entries than the member limit", "x.zip", small, func() []byte { return hostile.ManyEntriesZip(1500) }, "models/unscannable", "more than 1000 entries", true},
		{"member that cannot be decompressed", "x.pt", New(), hostile.CorruptMemberZip, "models/unscannable", "cannot be decompressed", false},
		{"truncated npy v2 header", "x.npy", New(), hostile.NpyTruncated, "models/unscannable", "truncated inside its header", false},
		{"PyFunc after 70,000 nodes", "saved_model.pb", New(), func() []byte { return hostile.SavedModel(70_000) }, "models/tf-unsafe-op", "PyFunc", false},
		{"tar members climb out", "x.tar", New(), func() []byte { return hostile.ClimbingTar("/etc/shadow") }, "models/archive-malformed", "/etc/shadow", false},
		{"zip members climb out", "x.zip", New(), func() []byte { return hostile.ClimbingZip("../../../etc/shadow") }, "models/archive-malformed", "../evil.pkl", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.data()
			fs, incomplete := scanHostile(t, c.s, c.file, data)
			if !has(fs, c.rule, c.text) {
				t.Errorf("no %s finding with %q; got %v", c.rule, c.text, fs[:min(len(fs), 5)])
			}
			if incomplete != c.incomplete {
				t.Errorf("incomplete = %v, want %v", incomplete, c.incomplete)
			}
			if len(fs) > 2*scanners.MaxFindingsPerRule+20 {
				t.Errorf("%d findings", len(fs))
			}
		})
	}
	// The nested zip's depth limit is one finding, not 65,536.
	fs, _ := scanHostile(t, New(), "x.zip", hostile.NestedZip(16, 5))
	if n := len(slices.DeleteFunc(slices.Clone(fs), func(f scanners.Finding) bool { return !strings.Contains(f.Message, "nested deeper") })); n != 1 {
		t.Errorf("%d depth findings, want 1", n)
	}
	// Negative twins: the same shapes within the limits say nothing above low.
	for name, data := range map[string][]byte{
		"x.zip":          nestedZip(3),
		"m.safetensors":  validSafetensors(),
		"saved_model.pb": bytes.ReplaceAll(hostile.SavedModel(100), []byte("PyFunc"), []byte("Conxxx")),
	} {
		if fs, inc := scanHostile(t, New(), name, data); len(rulesOf(fs, scanners.SeverityMedium)) > 0 || inc {
			t.Errorf("%s: %v (incomplete %v)", name, rulesOf(fs, 0), inc)
		}
	}
}

func validSafetensors() []byte {
	h := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	var b bytes.Buffer
	b.Write([]byte{byte(len(h)), 0, 0, 0, 0, 0, 0, 0})
	b.WriteString(h)
	b.Write(make([]byte, 8))
	return b.Bytes()
}

// sparse is an HDF5 file of size bytes that is the signature, zeros, and
// tail at its end, without holding them in memory.
type sparse struct {
	size int64
	tail []byte
}

func (s *sparse) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), s.size-off))
	clear(p[:n])
	copyAt := func(b []byte, at int64) { // b placed at offset at of the file
		if lo, hi := max(off, at), min(off+int64(n), at+int64(len(b))); lo < hi {
			copy(p[lo-off:hi-off], b[lo-at:hi-at])
		}
	}
	copyAt(hostile.H5Magic, 0)
	copyAt(s.tail, s.size-int64(len(s.tail)))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestHDF5LateLambda: a Lambda layer past the first 256 MiB of an .h5 file
// was never seen; now the whole file is searched, and past MaxSearch the
// limit is reported.
func TestHDF5LateLambda(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 300 MiB")
	}
	f := &sparse{size: 300 << 20, tail: hostile.H5Tail()}
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: "model.h5", Size: f.size}
	fs, err := New().Scan(context.Background(), a, io.NewSectionReader(f, 0, f.size))
	if err != nil || !has(fs, "models/keras-lambda", "late_lambda") {
		t.Errorf("late Lambda: %v %v", fs, err)
	}
	fs, err = New(WithLimits(Limits{MaxSearch: 64 << 20})).Scan(context.Background(), a, io.NewSectionReader(f, 0, f.size))
	if !errors.Is(err, scanners.ErrIncomplete) || !has(fs, "models/unscannable", "searched") {
		t.Errorf("search limit: %v %v", fs, err)
	}
}

// TestBombThenPickle: the pickle after a member that spends the
// decompression budget is not scanned, and that is an incomplete scan.
func TestBombThenPickle(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	bomb := append([]byte("\x80\x02]q\x00("), bytes.Repeat([]byte("K\x01"), 4<<20)...)
	for _, m := range []struct {
		name string
		data []byte
	}{{"archive/bomb.pkl", bomb}, {"archive/data.pkl", hostile.NestedPickle(0)}} {
		w, _ := zw.Create(m.name)
		w.Write(m.data)
	}
	zw.Close()
	fs, incomplete := scanHostile(t, New(WithLimits(Limits{MaxExpand: 1 << 20})), "x.pt", b.Bytes())
	if !incomplete || !has(fs, "models/unscannable", "decompressed from one file") {
		t.Errorf("budget: incomplete %v, %v", incomplete, fs)
	}
}

// nestedZip is an ordinary zip of a zip … of a pickle, depth levels.
func nestedZip(depth int) []byte {
	data := hostile.NestedPickle(0)[:0]
	data = append(data, "\x80\x02}q\x00."...)
	for range depth {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, _ := zw.Create("inner.zip")
		w.Write(data)
		zw.Close()
		data = b.Bytes()
	}
	return data
}

// TestNestedPickles: every pickle nested in a bytes constant is walked
// (only 16 per stream were, silently), and nesting deeper than 8 is a limit.
func TestNestedPickles(t *testing.T) {
	call := []byte("\x80\x02cposix\nsystem\n(S'true'\ntR.")
	benign := []byte("\x80\x02K\x01.")
	bytesConst := func(b *bytes.Buffer, d []byte) {
		b.WriteByte('B')
		b.Write([]byte{byte(len(d)), byte(len(d) >> 8), byte(len(d) >> 16), byte(len(d) >> 24)})
		b.Write(d)
	}
	var many bytes.Buffer
	many.WriteString("\x80\x02(")
	for range 40 {
		bytesConst(&many, benign)
	}
	bytesConst(&many, call) // the 41st
	many.WriteString("l.")
	fs, incomplete := scanHostile(t, New(), "x.pkl", many.Bytes())
	if incomplete || !has(fs, "models/pickle-dangerous-global", "posix.system") {
		t.Errorf("41st nested pickle: incomplete %v, %v", incomplete, fs[:min(len(fs), 5)])
	}
	deep := call
	for range 10 {
		var b bytes.Buffer
		b.WriteString("\x80\x02")
		bytesConst(&b, deep)
		b.WriteString(".")
		deep = b.Bytes()
	}
	fs, incomplete = scanHostile(t, New(), "x.pkl", deep)
	if !incomplete || !has(fs, "models/unscannable", "nested in bytes constants") {
		t.Errorf("10 deep: incomplete %v, %v", incomplete, fs[:min(len(fs), 5)])
	}
}

// TestStringsPastTheBatch: a key after 4 MiB of other strings in a pickle
// reaches the strings scanner (it was dropped silently).
func TestStringsPastTheBatch(t *testing.T) {
	key := "KEY-" + strings.Repeat("k", 40)
	var b bytes.Buffer
	b.WriteString("\x80\x02(")
	filler := strings.Repeat("f", 4000)
	for range 1500 { // 6 MB of strings
		b.WriteString("X\xa0\x0f\x00\x00" + filler)
	}
	b.WriteString("X" + string([]byte{byte(len(key)), 0, 0, 0}) + key + "l.")
	c := &capture{}
	if _, err := scanners.ScanBytes(context.Background(), New(WithStrings(c.scan)), &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "x.pkl"}, b.Bytes()); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(c.data, func(d string) bool { return strings.Contains(d, key) }) {
		t.Errorf("the key after 6 MB of strings was not handed over (%d batches)", len(c.data))
	}
}

// TestReal7z: archives written by 7-Zip itself (LZMA, LZMA2 at -mx9, an
// uncompressed header, copy, bzip2, deflate; solid and not) pass the header
// check and their pickle is found. Needs p7zip-full's 7z.
func TestReal7z(t *testing.T) {
	bin, err := exec.LookPath("7z")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("7z (Debian package p7zip-full) is needed")
		}
		t.Skip("7z (Debian package p7zip-full) not installed")
	}
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "data.pkl"), hostile.NestedPickle(0), 0o644)
	for i := range 30 {
		os.WriteFile(filepath.Join(src, "sub", fmt.Sprintf("f%d.txt", i)), bytes.Repeat([]byte(fmt.Sprintf("line %d\n", i)), 200), 0o644)
	}
	for _, flags := range [][]string{{"-mx9"}, {"-m0=lzma", "-mx5"}, {"-ms=off", "-mhc=off"}, {"-m0=copy"}, {"-m0=bzip2"}, {"-m0=deflate"}, {"-mx9", "-md=256m"}} {
		out := filepath.Join(t.TempDir(), "x.7z")
		cmd := exec.Command(bin, append(append([]string{"a", "-bd"}, flags...), out, src)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("7z %v: %v\n%s", flags, err, b)
		}
		data, _ := os.ReadFile(out)
		fs, incomplete := scanHostile(t, New(), "x.7z", data)
		if incomplete || !has(fs, "models/pickle-dangerous-global", "posix.system") || has(fs, "models/unscannable", "") {
			t.Errorf("7z %v: incomplete %v, %v", flags, incomplete, fs)
		}
	}
}

// TestXzDictionaryAsStated: an xz file's decoder allocates the dictionary
// its block headers state (checkXz has held them to MaxDict), not
// MaxDict: the limit handed to the xz reader as its capacity was a floor
// there, 128 MiB for every small .xz file (Debian's Python packages hold
// fifteen, which took a directory scan's peak RSS past 450 MB).
func TestXzDictionaryAsStated(t *testing.T) {
	data := hostile.XzDict(2) // an 8 KiB dictionary
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fs, incomplete := scanHostile(t, New(), "x.pkl.xz", data)
	runtime.ReadMemStats(&after)
	if incomplete || has(fs, "models/unscannable", "") {
		t.Fatalf("the xz file was not scanned: %v", fs)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("scanning a %d-byte xz file with an 8 KiB dictionary allocated %d MiB", len(data), n>>20)
	}
}

// TestPeelXzDictionary: an xz stream inside a pickle's bytes is peeled
// with the dictionary its header states, and one that states more than
// 8 MiB is not peeled (the decoder would allocate it at once: 3 GiB here).
func TestPeelXzDictionary(t *testing.T) {
	if _, err := unpack.XZ(bytes.NewReader(nil), 0); errors.Is(err, unpack.ErrNotInBuild) {
		t.Skip("xz is not in mlwarden-sbatch's build")
	}
	for _, c := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"8 KiB dictionary", hostile.XzDict(2), true},
		{"3 GiB dictionary", hostile.XzDict(39), false},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		kind, out, ok := peel(c.data)
		runtime.ReadMemStats(&after)
		if ok != c.ok || ok && (kind != "xz" || string(out) != "\x80\x02K\x01.") {
			t.Errorf("%s: peel = %q, %q, %v; want the pickle out: %v", c.name, kind, out, ok, c.ok)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Errorf("%s: peeling allocated %d MiB", c.name, n>>20)
		}
	}
}
