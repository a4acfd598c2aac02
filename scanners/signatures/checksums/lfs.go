package checksums

import (
	"bytes"
	"strconv"
	"strings"
)

// LFSPointerMax is the size below which git-lfs tries to read a blob as a
// pointer (git-lfs blobSizeCutoff).
const LFSPointerMax = 1024

// Pointer is a git-LFS pointer file: the SHA-256 and size of the content that
// should be there instead.
type Pointer struct {
	OID  string // lower-case hex SHA-256
	Size int64
}

var lfsVersions = []string{
	"https://git-lfs.github.com/spec/v1",
	"https://hawser.github.com/spec/v1",
	"http://git-media.io/v/2",
}

// ParseLFSPointer reads data as a git-LFS pointer (git-lfs docs/spec.md):
// `version` first, then keys in ascending order, `oid sha256:HEX` and `size N`
// required. ok is false when data is not a pointer.
func ParseLFSPointer(data []byte) (p Pointer, ok bool) {
	if len(data) >= LFSPointerMax || !bytes.HasPrefix(data, []byte("version ")) {
		return Pointer{}, false
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	prev := ""
	var haveOID, haveSize bool
	for i, l := range lines {
		k, v, found := strings.Cut(l, " ")
		if !found || k == "" || strings.ContainsAny(v, "\r") {
			return Pointer{}, false
		}
		for _, c := range k {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
				return Pointer{}, false
			}
		}
		if i == 0 {
			if k != "version" || !contains(lfsVersions, v) {
				return Pointer{}, false
			}
			continue
		}
		if k <= prev {
			return Pointer{}, false // keys after version are sorted and unique
		}
		prev = k
		switch k {
		case "oid":
			h, found := strings.CutPrefix(v, "sha256:")
			if !found || len(h) != 64 || !isHex(h) {
				return Pointer{}, false
			}
			p.OID, haveOID = h, true
		case "size":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || (len(v) > 1 && v[0] == '0') {
				return Pointer{}, false
			}
			p.Size, haveSize = n, true
		}
	}
	return p, haveOID && haveSize
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
