package models

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// A descr naming an object field: '|O', 'O', '<O8' alone or inside a
// structured dtype's list of fields.
var reObjectDescr = lazyregexp.New(`'[|<>=]?O\d*'|"[|<>=]?O\d*"`)

// npy reads an .npy header (versions 1 to 3); an array whose dtype holds
// Python objects is followed by a pickle, which is walked.
func (sc *scan) npy(p place, ra io.ReaderAt, size int64) {
	h := make([]byte, 12)
	n, _ := ra.ReadAt(h, 0)
	if n < 10 {
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("NumPy file%s is truncated inside its header. %s", p.in(), ruleUnscannable.Fix), "npy header truncated")
		return
	}
	major := h[6]
	var hlen, start int64
	switch major {
	case 1:
		hlen, start = int64(binary.LittleEndian.Uint16(h[8:])), 10
	case 2, 3:
		if n < 12 {
			sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("NumPy file%s (format version %d) is truncated inside its header. %s", p.in(), major, ruleUnscannable.Fix), "npy header truncated")
			return
		}
		hlen, start = int64(binary.LittleEndian.Uint32(h[8:])), 12
	default:
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("NumPy file%s has unknown format version %d. %s", p.in(), major, ruleUnscannable.Fix), fmt.Sprintf("npy version %d", major))
		return
	}
	if hlen > 1<<20 || start+hlen > size {
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("NumPy file%s declares a header of %d bytes, beyond the file or any sane size. %s", p.in(), hlen, ruleUnscannable.Fix), fmt.Sprintf("npy header length %d", hlen))
		return
	}
	hdr := make([]byte, hlen)
	if m, err := ra.ReadAt(hdr, start); m < len(hdr) {
		sc.add(ruleUnscannable, ruleUnscannable.Severity, fmt.Sprintf("NumPy file%s: its header could not be read (%v). %s", p.in(), err, ruleUnscannable.Fix), "npy header unreadable")
		return
	}
	if !reObjectDescr.Match(hdr) {
		return
	}
	sc.add(ruleNumpyObject, ruleNumpyObject.Severity,
		fmt.Sprintf("NumPy array%s has an object dtype, so its data is a pickle that np.load(allow_pickle=True) runs; the pickle was analysed. %s", p.in(), ruleNumpyObject.Fix),
		"descr with O in "+fmt.Sprintf("npy v%d header", major))
	body := io.NewSectionReader(ra, start+hlen, size-start-hlen)
	sc.pickle(p, bufio.NewReaderSize(body, 64<<10), pickleNpy, nil)
}
