package models

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	gopickle "github.com/nlpodyssey/gopickle/pickle"

	"github.com/mlwarden/mlwarden/scanners/models/pickle"
)

// legacyProtocol is the protocol version PyTorch's legacy format writes in
// its second pickle; torch.load refuses any other.
const legacyProtocol = 1001

// legacyHeader checks the second pickle of a PyTorch legacy checkpoint (the
// protocol version) the way torch.load does. The value is decoded with
// gopickle's unpickler, which serves well for such a tiny, plain pickle; it
// is handed the bytes only after our walker has shown them to be a few
// opcodes with no imports and no length-prefixed data (gopickle allocates
// whatever length a stream declares, so it must never see hostile input).
func (sc *scan) legacyHeader(p place, ra io.ReaderAt) {
	buf := make([]byte, 64)
	n, _ := ra.ReadAt(buf, int64(len(legacyMagic))+1) // after the magic pickle's STOP
	buf = buf[:n]
	res := pickle.Walk(bytes.NewReader(buf), pickle.Limits{MaxStreams: 1})
	if res.Ops > 4 || len(res.Problems) > 0 || len(res.Globals) > 0 || len(res.Strings) > 0 || res.End > int64(len(buf)) {
		return // unusual: the walk of the whole file reports it
	}
	u := gopickle.NewUnpickler(bytes.NewReader(buf[:res.End]))
	u.FindClass = func(module, name string) (any, error) { return nil, fmt.Errorf("no classes in a header") }
	v, err := u.Load()
	if ver, ok := v.(int); err != nil || !ok || ver != legacyProtocol {
		sc.add(ruleMalformed, ruleMalformed.Severity,
			fmt.Sprintf("PyTorch legacy checkpoint%s declares protocol version %v (torch.load expects %d): the file is not what it claims to be, which is how scanners are steered away from its later pickles. %s", p.in(), v, legacyProtocol, ruleMalformed.Fix),
			fmt.Sprintf("legacy protocol version %v", v))
	}
}

// storageElemSize is the element size of PyTorch's typed storage classes.
var storageElemSize = map[string]int64{
	"FloatStorage": 4, "DoubleStorage": 8, "HalfStorage": 2, "BFloat16Storage": 2, "LongStorage": 8,
	"IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1,
	"ComplexFloatStorage": 8, "ComplexDoubleStorage": 16, "QInt8Storage": 1, "QUInt8Storage": 1,
	"QInt32Storage": 4, "QUInt4x2Storage": 1, "QUInt2x4Storage": 1,
}

// legacyStorages checks that the raw storage records after the five
// pickles (per storage: an int64 element count, then the elements) end
// exactly at the end of the file: bytes after them are read by no loader
// and hide data from scanners; a file that ends early is truncated.
func (sc *scan) legacyStorages(p place, res *pickle.Result, size int64) {
	if res.Streams < 5 || size < 0 {
		return
	}
	seen := map[string]bool{}
	want := res.End
	for _, st := range res.Storages {
		if seen[st.Key] {
			continue
		}
		seen[st.Key] = true
		_, name, _ := strings.Cut(st.Type, ".")
		es, ok := storageElemSize[name]
		if !ok || st.Numel < 0 || st.Numel > (1<<62)/16 {
			return // a storage type we cannot size: say nothing
		}
		want += 8 + st.Numel*es
	}
	switch {
	case want < size:
		sc.add(ruleTrailing, ruleTrailing.Severity,
			fmt.Sprintf("PyTorch legacy checkpoint%s has %d bytes after its last storage (the storages end at byte %d of %d): no loader reads them, and they can hide a payload from scanners. %s", p.in(), size-want, want, size, ruleTrailing.Fix),
			fmt.Sprintf("%d bytes after the storages at offset %d", size-want, want))
	case want > size:
		sc.add(ruleMalformed, ruleMalformed.Severity,
			fmt.Sprintf("PyTorch legacy checkpoint%s is truncated: its storages need %d bytes, the file has %d. %s", p.in(), want, size, ruleMalformed.Fix),
			fmt.Sprintf("storages end at %d, file size %d", want, size))
	}
}
