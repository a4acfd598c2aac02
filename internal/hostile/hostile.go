// Package hostile generates the crafted inputs of issue 15's fuzz and fault
// campaign: files shaped to crash, exhaust, or slip past a scanner. Tests
// build them at run time (nothing crafted is committed); every payload is
// harmless (true, print) and every credential is made from a seed.
package hostile

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// Token returns a fake Hugging Face token made from seed (format-valid for
// the scanner's rule, issued by nobody).
func Token(seed uint64) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var b strings.Builder
	b.WriteString("hf_")
	for range 34 {
		b.WriteByte(alnum[r.IntN(len(alnum))])
	}
	return b.String()
}

// SevenZip returns a 7z archive whose (plain) header is hdr, with valid
// start-header and header CRCs so that a reader gets as far as parsing it.
func SevenZip(hdr []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c, 0, 4})
	start := make([]byte, 20)
	binary.LittleEndian.PutUint64(start[0:], 0) // next header right after
	binary.LittleEndian.PutUint64(start[8:], uint64(len(hdr)))
	binary.LittleEndian.PutUint32(start[16:], crc32.ChecksumIEEE(hdr))
	binary.Write(&b, binary.LittleEndian, crc32.ChecksumIEEE(start))
	b.Write(start)
	b.Write(hdr)
	return b.Bytes()
}

// num7z encodes a 7z NUMBER.
func num7z(v uint64) []byte {
	if v < 0x80 {
		return []byte{byte(v)}
	}
	b := []byte{0xff}
	return binary.LittleEndian.AppendUint64(b, v)
}

// SevenZipFiles is a 7z header that declares n files (2^28 made the reader
// allocate 30 GB of file headers).
func SevenZipFiles(n uint64) []byte {
	h := []byte{0x01, 0x05}
	h = append(h, num7z(n)...)
	return SevenZip(append(h, 0x00, 0x00))
}

// SevenZipProps is a 7z header with one folder whose coder declares size
// bytes of properties.
func SevenZipProps(size uint64) []byte {
	h := []byte{0x01, 0x04, 0x07, 0x0b, 0x01, 0x00, 0x01, 0x23, 0x03, 0x01, 0x01}
	h = append(h, num7z(size)...)
	return SevenZip(append(h, 0, 0, 0, 0, 0))
}

// SevenZipEncoded is a 7z archive whose header is LZMA-compressed (as 7-Zip
// writes it) and, once decompressed, declares n files: the counts are not
// bounded by the archive's size.
func SevenZipEncoded(n uint64) []byte {
	inner := append([]byte{0x01, 0x05}, num7z(n)...)
	inner = append(inner, 0x00, 0x00)
	var packed bytes.Buffer
	w, err := lzma.WriterConfig{DictCap: 1 << 16, SizeInHeader: true, Size: int64(len(inner))}.NewWriter(&packed)
	if err != nil {
		panic(err)
	}
	w.Write(inner)
	w.Close()
	raw := packed.Bytes()
	props, data := raw[:5], raw[13:]
	// kEncodedHeader, PackInfo(pos 0, 1 stream, size), UnpackInfo(1 folder, LZMA), sizes.
	h := []byte{0x17, 0x06, 0x00, 0x01, 0x09}
	h = append(h, num7z(uint64(len(data)))...)
	h = append(h, 0x00, 0x07, 0x0b, 0x01, 0x00, 0x01, 0x23, 0x03, 0x01, 0x01, 0x05)
	h = append(h, props...)
	h = append(h, 0x0c)
	h = append(h, num7z(uint64(len(inner)))...)
	h = append(h, 0x00, 0x00)
	// The packed header sits before the header that describes it.
	var b bytes.Buffer
	b.Write([]byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c, 0, 4})
	start := make([]byte, 20)
	binary.LittleEndian.PutUint64(start[0:], uint64(len(data)))
	binary.LittleEndian.PutUint64(start[8:], uint64(len(h)))
	binary.LittleEndian.PutUint32(start[16:], crc32.ChecksumIEEE(h))
	binary.Write(&b, binary.LittleEndian, crc32.ChecksumIEEE(start))
	b.Write(start)
	b.Write(data)
	b.Write(h)
	return b.Bytes()
}

// LzmaDict is an .lzma ("alone") stream of unknown size whose header asks
// for a dict-byte dictionary (the decoder allocates it before any data).
func LzmaDict(dict uint32) []byte {
	var b bytes.Buffer
	w, err := lzma.WriterConfig{DictCap: 1 << 16}.NewWriter(&b)
	if err != nil {
		panic(err)
	}
	w.Write([]byte("\x80\x02K\x01."))
	w.Close()
	out := b.Bytes()
	binary.LittleEndian.PutUint32(out[1:5], dict)
	return out
}

// XzDict is an xz file whose block asks for an LZMA2 dictionary of
// property p (39: 3 GiB), its header CRC fixed.
func XzDict(p byte) []byte {
	var b bytes.Buffer
	w, err := xz.WriterConfig{DictCap: 1 << 16}.NewWriter(&b)
	if err != nil {
		panic(err)
	}
	w.Write([]byte("\x80\x02K\x01."))
	w.Close()
	out := b.Bytes()
	hsize := (int(out[12]) + 1) * 4
	hdr := out[12 : 12+hsize]
	i := bytes.Index(hdr[2:], []byte{0x21, 0x01})
	if i < 0 {
		panic("no LZMA2 filter in the block header")
	}
	hdr[2+i+2] = p
	binary.LittleEndian.PutUint32(hdr[hsize-4:], crc32.ChecksumIEEE(hdr[:hsize-4]))
	return out
}

// Safetensors is a safetensors file whose header holds about size bytes of
// tensor entries, each with an unknown dtype (one finding each, unbounded
// before).
func Safetensors(size int) []byte {
	var h bytes.Buffer
	h.WriteString("{")
	for i := 0; h.Len() < size; i++ {
		if i > 0 {
			h.WriteString(",")
		}
		fmt.Fprintf(&h, `"t%d":{"dtype":"X","shape":[1],"data_offsets":[0,1]}`, i)
	}
	h.WriteString("}")
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(h.Len()))
	b.Write(h.Bytes())
	b.WriteByte(0)
	return b.Bytes()
}

// NestedPickle is a pickle of depth nested MARKs and then a call of
// posix.system("true"): past the MARK limit the call was never reported.
func NestedPickle(depth int) []byte {
	var b bytes.Buffer
	b.WriteString("\x80\x02")
	b.Write(bytes.Repeat([]byte("("), depth))
	b.WriteString("cposix\nsystem\n(S'true'\ntR.")
	return b.Bytes()
}

// MemoPickle is a pickle of about size bytes that memoises a new string
// per 11 bytes (memory grew with the file: 16× its size).
func MemoPickle(size int) []byte {
	var b bytes.Buffer
	b.WriteString("\x80\x04")
	for i := 0; b.Len() < size; i++ {
		b.WriteString("X\x04\x00\x00\x00")
		fmt.Fprintf(&b, "%04x", i&0xffff)
		b.WriteString("\x94\x30")
	}
	b.WriteString("N.")
	return b.Bytes()
}

// NestedZip is a zip of fanout entries that all point at one stored member,
// itself such a zip, depth levels deep around a pickle: a few KB that expand
// to fanout^depth members (16 and 5: 65,536 depth-limit findings from 14 KB).
func NestedZip(fanout, depth int) []byte {
	data := []byte("\x80\x02}q\x00.")
	for range depth {
		data = fanZip(data, fanout)
	}
	return data
}

// fanZip writes one stored member named m.zip and fanout central directory
// entries that all point at it.
func fanZip(member []byte, fanout int) []byte {
	var b bytes.Buffer
	name := "m.zip"
	crc := crc32.ChecksumIEEE(member)
	le := func(v ...any) {
		for _, x := range v {
			binary.Write(&b, binary.LittleEndian, x)
		}
	}
	le(uint32(0x04034b50), uint16(20), uint16(0), uint16(0), uint16(0), uint16(0), crc, uint32(len(member)), uint32(len(member)), uint16(len(name)), uint16(0))
	b.WriteString(name)
	b.Write(member)
	cd := b.Len()
	for range fanout {
		le(uint32(0x02014b50), uint16(20), uint16(20), uint16(0), uint16(0), uint16(0), uint16(0), crc, uint32(len(member)), uint32(len(member)), uint16(len(name)), uint16(0), uint16(0), uint16(0), uint16(0), uint32(0), uint32(0))
		b.WriteString(name)
	}
	cdSize := b.Len() - cd
	le(uint32(0x06054b50), uint16(0), uint16(0), uint16(fanout), uint16(fanout), uint32(cdSize), uint32(cd), uint16(0))
	return b.Bytes()
}

// ManyEntriesZip is a zip of n stored entries, the last a pickle that calls
// posix.system.
func ManyEntriesZip(n int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := range n - 1 {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%d", i), Method: zip.Store})
		w.Write([]byte("x"))
	}
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "last/data.pkl", Method: zip.Store})
	w.Write(NestedPickle(0))
	zw.Close()
	return b.Bytes()
}

// CorruptMemberZip is a zip whose deflated data.pkl cannot be decompressed.
func CorruptMemberZip() []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Deflate})
	w.Write(bytes.Repeat(NestedPickle(0), 64))
	zw.Close()
	out := b.Bytes()
	// Garble the deflate stream after its first bytes.
	start := 30 + len("archive/data.pkl") + 4
	for i := start; i < start+32 && i < len(out); i++ {
		out[i] = 0xff
	}
	return out
}

// NpyTruncated is a version-2 .npy file cut inside its header length.
func NpyTruncated() []byte { return []byte("\x93NUMPY\x02\x00\x10\x00") }

// H5Tail is what ends an HDF5 file with a Keras config holding a Lambda
// layer; put it past 256 MiB of anything after the HDF5 signature.
func H5Tail() []byte {
	return []byte(`{"class_name": "Sequential", "config": {"name": "m", "layers": [{"class_name": "Lambda", "config": {"name": "late_lambda", "function": "print"}}]}}`)
}

// H5Magic starts an HDF5 file.
var H5Magic = []byte("\x89HDF\r\n\x1a\n")

// SavedModel is a saved_model.pb whose graph has nodes Const nodes and then
// one PyFunc node (after 70,000 nodes, it was never seen).
func SavedModel(nodes int) []byte {
	field := func(num int, b []byte) []byte {
		out := binary.AppendUvarint(nil, uint64(num<<3|2))
		out = binary.AppendUvarint(out, uint64(len(b)))
		return append(out, b...)
	}
	var graph bytes.Buffer
	for i := 0; i <= nodes; i++ {
		op := "Const"
		if i == nodes {
			op = "PyFunc"
		}
		graph.Write(field(1, append(field(1, fmt.Appendf(nil, "n%d", i)), field(2, []byte(op))...)))
	}
	meta := field(2, graph.Bytes())
	return append([]byte{0x08, 0x01}, field(2, meta)...)
}

// ClimbingTar is a tar whose members climb out of the extraction directory
// (../, absolute, a drive letter) and whose data.pkl is a symbolic link to
// target (a canary outside the scanned tree).
func ClimbingTar(target string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, n := range []string{"../../etc/cron.d/job", "/etc/passwd", `C:\Windows\evil.dll`} {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 4, Typeflag: tar.TypeReg})
		tw.Write([]byte("true"))
	}
	tw.WriteHeader(&tar.Header{Name: "data.pkl", Linkname: target, Typeflag: tar.TypeSymlink, Mode: 0o777})
	tw.Close()
	return b.Bytes()
}

// ClimbingZip is a zip with a member named ../evil.pkl (a pickle) and a
// symbolic link member to target.
func ClimbingZip(target string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("../evil.pkl")
	w.Write(NestedPickle(0))
	h := &zip.FileHeader{Name: "weights.pkl", Method: zip.Store}
	h.SetMode(0o777 | 1<<27) // os.ModeSymlink
	w, _ = zw.CreateHeader(h)
	w.Write([]byte(target))
	zw.Close()
	return b.Bytes()
}

// DeepShell is a script of n nested $( … ) (200,000 overflowed the shell
// parser's stack).
func DeepShell(n int) []byte {
	return []byte("#!/bin/bash\necho " + strings.Repeat("$(", n) + "x" + strings.Repeat(")", n) + "\n")
}

// NULScript is a batch script with a NUL byte in front of a token.
func NULScript(token string) []byte {
	return []byte("x\x00\n#!/bin/bash\n#SBATCH -N1\nexport HF_TOKEN=" + token + "\nsrun python train.py\n")
}

// LongLine is one line of about size bytes with a token near its end.
func LongLine(size int, token string) []byte {
	return []byte(strings.Repeat("a", size) + " HF_TOKEN=" + token + " " + strings.Repeat("b", 100) + "\n")
}

// InjectionName is a file name that clears the screen, sets the window
// title and forges a summary line.
const InjectionName = "x\x1b[2J\x1b]0;pwned\x07\nmlwarden: 1 target, 0 critical, 0 high, 0 medium, 0 low, 0 info\n.sh"

// ---------------------------------------------------------------------------
// Issue 37, item 20: payloads beside an image or a Hub cache's snapshots —
// files a walk that reads only the image's (or the snapshots') view never
// scans. Layouts and archives are written with go-containerregistry's own
// writers.

// ExecPickle is a pickle (protocol 4) that calls
// builtins.exec("print('x')") when loaded.
func ExecPickle() []byte {
	su := func(s string) []byte { return append([]byte{0x8c, byte(len(s))}, s...) }
	var b bytes.Buffer
	b.WriteString("\x80\x04")
	b.Write(su("builtins"))
	b.Write(su("exec"))
	b.WriteByte(0x93) // STACK_GLOBAL
	b.Write(su("print('x')"))
	b.WriteString("\x85R.") // TUPLE1, REDUCE, STOP
	return b.Bytes()
}

// besideImage is a harmless one-layer image.
func besideImage() (v1.Image, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	body := "print('hello')\n"
	tw.WriteHeader(&tar.Header{Name: "app/main.py", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write([]byte(body))
	tw.Close()
	data := b.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(empty.Image, l)
}

// OCILayoutBeside writes at dir an OCI image layout of one harmless image
// and, beside its blobs, what the image's walk never reads: evil.pkl
// (ExecPickle), sub/creds.env (HF_TOKEN=token), and a blob no manifest
// names, an ExecPickle stored under its digest as any blob is. It returns
// that blob's path in the layout (blobs/sha256/HEX).
func OCILayoutBeside(dir, token string) (string, error) {
	img, err := besideImage()
	if err != nil {
		return "", err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendImage(img); err != nil {
		return "", err
	}
	pkl := ExecPickle()
	h, _, err := v1.SHA256(bytes.NewReader(pkl))
	if err != nil {
		return "", err
	}
	if err := p.WriteBlob(h, io.NopCloser(bytes.NewReader(pkl))); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "evil.pkl"), pkl, 0o644); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "creds.env"), []byte("HF_TOKEN="+token+"\n"), 0o644); err != nil {
		return "", err
	}
	return "blobs/sha256/" + h.Hex, nil
}

// DockerArchiveBeside writes at file a `docker save` archive of the same
// image (tarball.Write) with, after its members, evil.pkl (ExecPickle),
// creds.env (HF_TOKEN=token), and a second member named as its first layer
// that holds a credential: go-containerregistry reads the first member of
// a name, so the second is never the layer. It returns that name.
func DockerArchiveBeside(file, token string) (string, error) {
	img, err := besideImage()
	if err != nil {
		return "", err
	}
	tag, err := name.NewTag("example.com/beside:1")
	if err != nil {
		return "", err
	}
	var saved bytes.Buffer
	if err := tarball.Write(tag, img, &saved); err != nil {
		return "", err
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(&saved)
	layer := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if layer == "" && strings.HasSuffix(h.Name, ".tar.gz") {
			layer = h.Name
		}
		tw.WriteHeader(h)
		if _, err := io.Copy(tw, tr); err != nil {
			return "", err
		}
	}
	if layer == "" {
		return "", fmt.Errorf("no layer member in the saved image")
	}
	creds := []byte("HF_TOKEN=" + token + "\n")
	for _, m := range []struct {
		name string
		body []byte
	}{{"evil.pkl", ExecPickle()}, {"creds.env", creds}, {layer, creds}} {
		tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body)), Typeflag: tar.TypeReg})
		tw.Write(m.body)
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return layer, os.WriteFile(file, out.Bytes(), 0o644)
}

// HubCacheCommit is the commit of HubCacheBeside's snapshot.
const HubCacheCommit = "0123456789abcdef0123456789abcdef01234567"

// HubCacheBeside writes at root a Hub cache with one repository folder,
// models--org--beside, whose snapshot links settings.env (HF_TOKEN=token)
// to its blob blobs/a1b2c3, and what a walk of the snapshots never reads:
// blobs/unlinked (ExecPickle, no snapshot links it),
// models--org--beside/evil.pkl (ExecPickle, beside blobs/), refs/pr/1
// holding a credential, and .locks/models--org--beside/x.lock holding one
// too. It returns the repository folder.
func HubCacheBeside(root, token string) (string, error) {
	repo := filepath.Join(root, "models--org--beside")
	snap := filepath.Join(repo, "snapshots", HubCacheCommit)
	locks := filepath.Join(root, ".locks", "models--org--beside")
	for _, d := range []string{filepath.Join(repo, "blobs"), filepath.Join(repo, "refs", "pr"), snap, locks} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	creds := []byte("HF_TOKEN=" + token + "\n")
	for _, f := range []struct {
		path string
		body []byte
	}{
		{filepath.Join(repo, "blobs", "a1b2c3"), creds},
		{filepath.Join(repo, "blobs", "unlinked"), ExecPickle()},
		{filepath.Join(repo, "evil.pkl"), ExecPickle()},
		{filepath.Join(repo, "refs", "main"), []byte(HubCacheCommit)},
		{filepath.Join(repo, "refs", "pr", "1"), creds},
		{filepath.Join(locks, "x.lock"), creds},
	} {
		if err := os.WriteFile(f.path, f.body, 0o644); err != nil {
			return "", err
		}
	}
	return repo, os.Symlink("../../blobs/a1b2c3", filepath.Join(snap, "settings.env"))
}

// OCILayoutPlatforms writes at dir an OCI image layout whose index holds
// two images: a harmless one for linux/host (the platform a scan picks by
// default) and one for linux/s390x whose layer holds creds.env
// (HF_TOKEN=token). A walk of the picked image never reads the other's
// blobs.
func OCILayoutPlatforms(dir, host, token string) error {
	harmless, err := besideImage()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	creds := "HF_TOKEN=" + token + "\n"
	tw.WriteHeader(&tar.Header{Name: "app/creds.env", Mode: 0o644, Size: int64(len(creds)), Typeflag: tar.TypeReg})
	tw.Write([]byte(creds))
	tw.Close()
	data := b.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return err
	}
	other, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(harmless, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: host})); err != nil {
		return err
	}
	return p.AppendImage(other, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "s390x"}))
}

// ---------------------------------------------------------------------------
// Issue 37, items 8 and 9: scripts that submit jobs and write the files
// they install from, shaped to multiply the work of reading them.

// NestedFileLoops writes a file of entries lines and then reads it in
// depth loops nested inside each other (while read a; do while read b;
// … done < f; done < f): checked once per entry, the loops multiply.
func NestedFileLoops(entries, depth int) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/bash\ncat > pkgs.txt <<'EOF'\n")
	for i := range entries {
		fmt.Fprintf(&b, "pkg%d\n", i)
	}
	b.WriteString("EOF\n")
	for i := range depth {
		fmt.Fprintf(&b, "while read -r p%d; do\n", i)
	}
	fmt.Fprintf(&b, "pip install \"$p%d\"\n", depth-1)
	for range depth {
		b.WriteString("done < pkgs.txt\n")
	}
	return []byte(b.String())
}

// PrintfAmplifier is lines of printf whose format, reused for each of its
// args arguments, writes far more than the line holds, to files a
// command later installs from.
func PrintfAmplifier(lines, args int) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	format := strings.Repeat("x", 1000) + "%s\\n"
	for i := range lines {
		fmt.Fprintf(&b, "printf '%s'%s > r%d.txt\n", format, strings.Repeat(" a", args), i)
	}
	b.WriteString("pip install -r r0.txt\n")
	return []byte(b.String())
}

// NestedSbatchHeredocs is a job that submits a job that submits a job …
// depth deep, each through sbatch <<EOFn, each with a directive cut at '#'.
func NestedSbatchHeredocs(depth int) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	for i := range depth {
		fmt.Fprintf(&b, "sbatch <<EOF%d\n#!/bin/bash\n#SBATCH --container-image=registry.example.com#x/y:%d\n", i, i)
	}
	for i := depth - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "EOF%d\n", i)
	}
	return []byte(b.String())
}
