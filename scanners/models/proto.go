package models

import (
	"encoding/binary"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
)

// TensorFlow ops that run Python or touch the file system (modelscan's and
// ModelAudit's lists).
var tfUnsafeOps = map[string]string{
	"PyFunc": "runs a Python function", "PyFuncStateless": "runs a Python function",
	"EagerPyFunc": "runs a Python function", "PyCall": "runs a Python function",
	"ReadFile": "reads a file", "WriteFile": "writes a file", "MatchingFiles": "lists files",
	"ImmutableConst": "maps a file into memory", "Save": "writes a checkpoint file", "SaveV2": "writes a checkpoint file",
	"SaveSlices": "writes a checkpoint file", "MergeV2Checkpoints": "moves and deletes checkpoint files",
	"ShardedFilename": "builds file names", "DeleteFile": "deletes files",
	"LoadAndRemapMatrix": "reads a checkpoint file", "PrintV2": "writes to a file or stream",
	"DebugIdentityV2": "writes debug dumps", "TFRecordDataset": "reads files", "FixedLengthRecordDataset": "reads files",
	"TextLineDataset": "reads files", "DecodeCSV": "parses data", "WholeFileReader": "reads files",
	"WholeFileReaderV2": "reads files", "DatasetToTFRecord": "writes files", "ExperimentalDatasetToTFRecord": "writes files",
	"SaveDataset": "writes files", "SnapshotDatasetV2": "writes files",
}

// Ops every SavedModel has in its saver subgraph, reported only when they
// are used outside it (a node name not under save/ or saver/).
var tfSaverOps = map[string]bool{"SaveV2": true, "Save": true, "SaveSlices": true, "MergeV2Checkpoints": true, "ShardedFilename": true, "RestoreV2": true, "StringJoin": true, "StaticRegexFullMatch": true}

var reOpIdent = lazyregexp.New(`^[A-Z][A-Za-z0-9_]{1,63}$`)

// pbReader reads protobuf bytes through a small block cache so that walking
// millions of fields costs few reads.
type pbReader struct {
	ra   io.ReaderAt
	size int64
	buf  []byte
	at   int64
}

func (r *pbReader) bytes(off, n int64) []byte {
	if off < 0 || n < 0 || off+n > r.size {
		return nil
	}
	if n > 64<<10 {
		b := make([]byte, n)
		if _, err := r.ra.ReadAt(b, off); err != nil && err != io.EOF {
			return nil
		}
		return b
	}
	if r.buf == nil || off < r.at || off+n > r.at+int64(len(r.buf)) {
		if r.buf == nil {
			r.buf = make([]byte, 128<<10)
		}
		m, _ := r.ra.ReadAt(r.buf[:cap(r.buf)], off)
		r.buf, r.at = r.buf[:m], off
		if int64(m) < n {
			return nil
		}
	}
	return r.buf[off-r.at : off-r.at+n]
}

func (r *pbReader) varint(off, end int64) (uint64, int64, bool) {
	n := int64(10)
	if end-off < n {
		n = end - off
	}
	b := r.bytes(off, n)
	v, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, 0, false
	}
	return v, off + int64(k), true
}

type pbField struct {
	num uint64
	wt  uint64
	off int64 // of the value (length-delimited: of the bytes)
	n   int64
}

// each calls fn for every field of the message in [off, end), in order,
// holding one field at a time; ok is false when the bytes are not a
// message. budget counts the fields visited.
func (r *pbReader) each(off, end int64, budget *int64, fn func(f pbField)) bool {
	for off < end {
		tag, next, ok := r.varint(off, end)
		if !ok || tag>>3 == 0 {
			return false
		}
		f := pbField{num: tag >> 3, wt: tag & 7}
		off = next
		switch f.wt {
		case 0:
			_, next, ok = r.varint(off, end)
			if !ok {
				return false
			}
			off = next
		case 1:
			off += 8
		case 5:
			off += 4
		case 2:
			l, next, ok := r.varint(off, end)
			if !ok || l > uint64(end-next) {
				return false
			}
			f.off, f.n = next, int64(l)
			off = next + int64(l)
		default:
			return false
		}
		if off > end {
			return false
		}
		*budget--
		if fn != nil {
			fn(f)
		}
	}
	return true
}

// pbMaxDepth is how deep messages are walked (protobuf's own parsers stop
// at 100).
const pbMaxDepth = 100

// protobuf checks a TensorFlow SavedModel or ONNX model, walking the
// protobuf wire format generically (no generated code for two large schemas
// of which we need three fields): a NodeDef is a message with a name (1) and
// an op (2); an ONNX external-data entry is a StringStringEntryProto whose
// key (1) is "location" and value (2) the path. Every field is visited, one
// at a time (a graph of 70,000 nodes is walked to its last); the walk is
// bounded by depth and by Limits.MaxSearch/64 field visits, and reaching
// either is a limit.
func (sc *scan) protobuf(p place, ra io.ReaderAt, size int64, name string) {
	r := &pbReader{ra: ra, size: size}
	budget := sc.s.lim.MaxSearch / 64
	probe := budget
	if !r.each(0, size, &probe, nil) || probe == budget {
		return // not a protobuf after all
	}
	onnx := strings.HasSuffix(strings.ToLower(name), ".onnx")
	seenOps := map[string]bool{}
	var walk func(off, end int64, depth int) bool
	walk = func(off, end int64, depth int) bool {
		if budget <= 0 {
			return true
		}
		var f1, f2 string
		isMsg := r.each(off, end, &budget, func(f pbField) {
			if f.wt == 2 && (f.num == 1 || f.num == 2) && f.n <= 4096 {
				if v := string(r.bytes(f.off, f.n)); f.num == 1 {
					f1 = v
				} else {
					f2 = v
				}
			}
		})
		if !isMsg {
			return false
		}
		if why, bad := tfUnsafeOps[f2]; bad && f1 != "" && !onnx && reOpIdent.MatchString(f2) {
			saver := tfSaverOps[f2] && (strings.HasPrefix(f1, "save") || strings.HasPrefix(f1, "saver") || strings.Contains(f1, "/save") || strings.Contains(f1, "saver"))
			if !saver && !seenOps[f2+"\x00"+f1] {
				seenOps[f2+"\x00"+f1] = true
				sc.add(ruleTFOp, ruleTFOp.Severity,
					fmt.Sprintf("TensorFlow graph%s has node %q with op %s, which %s when the graph runs. %s", p.in(), f1, f2, why, ruleTFOp.Fix),
					fmt.Sprintf("node %s op %s", f1, f2))
			}
		}
		if f1 == "location" && f2 != "" {
			if bad, why := onnxEscapes(f2); bad {
				sc.add(ruleONNXPath, ruleONNXPath.Severity,
					fmt.Sprintf("ONNX model%s stores tensor data at external location %q, which %s. %s", p.in(), f2, why, ruleONNXPath.Fix),
					"location "+f2)
			}
		}
		r.each(off, end, new(int64), func(f pbField) {
			if f.wt != 2 || f.n < 2 || budget <= 0 {
				return
			}
			if depth+1 > pbMaxDepth {
				probe := int64(1 << 20)
				if r.each(f.off, f.off+f.n, &probe, nil) {
					sc.limit("protobuf depth limit", p, fmt.Sprintf("Protobuf model%s nests messages deeper than %d: what is below was not walked.", p.in(), pbMaxDepth))
				}
				return
			}
			walk(f.off, f.off+f.n, depth+1)
		})
		return true
	}
	walk(0, size, 0)
	if onnx {
		sc.onnxCustomOps(p, r, size)
	}
	if budget <= 0 {
		sc.limit("protobuf field limit", p, fmt.Sprintf("Protobuf model%s has more than %d fields to walk: the rest were not walked.", p.in(), sc.s.lim.MaxSearch/64))
	}
}

// onnxEscapes reports whether an ONNX external-data location leaves the
// model's directory: absolute, or climbing out once normalised, as onnx's
// checker resolves it (clean_relative_path): "sub/../w.bin" is w.bin in
// the model's directory, not traversal (it had been a false block).
func onnxEscapes(loc string) (bool, string) {
	l := strings.ReplaceAll(loc, `\`, "/")
	switch {
	case strings.HasPrefix(l, "/"):
		return true, "is an absolute path"
	case len(l) >= 2 && l[1] == ':':
		return true, "is an absolute Windows path"
	}
	if c := path.Clean(l); c == ".." || strings.HasPrefix(c, "../") {
		return true, "climbs out of the model directory with .."
	}
	return false, ""
}

// escapes reports whether an archive member name, a link target or a
// path a Keras config writes to leaves the directory it is relative to;
// any .. is reported.
func escapes(loc string) (bool, string) {
	l := strings.ReplaceAll(loc, `\`, "/")
	switch {
	case strings.HasPrefix(l, "/"):
		return true, "is an absolute path"
	case len(l) >= 2 && l[1] == ':':
		return true, "is an absolute Windows path"
	}
	for _, part := range strings.Split(path.Clean(l), "/") {
		if part == ".." {
			return true, "climbs out of the model directory with .."
		}
	}
	for _, part := range strings.Split(l, "/") {
		if part == ".." {
			return true, "climbs with .."
		}
	}
	return false, ""
}

// onnxStdDomains are the operator domains ONNX and ONNX Runtime implement
// natively (ONNX Runtime's contrib, NCHWc and experimental kernels, the
// ATen fallback PyTorch's exporter writes).
var onnxStdDomains = map[string]bool{
	"": true, "ai.onnx": true, "ai.onnx.ml": true, "ai.onnx.training": true, "ai.onnx.preview.training": true,
	"com.microsoft": true, "com.microsoft.nchwc": true, "com.microsoft.experimental": true,
	"com.ms.internal.nhwc": true, "org.pytorch.aten": true,
}

// onnxPython reports whether an op in a custom domain names Python
// execution: onnxruntime-extensions' PyOp/PyCustomOp, PyFunc-like names,
// or a domain that says Python.
func onnxPython(domain, op string) bool {
	o, d := strings.ToLower(op), strings.ToLower(domain)
	switch o {
	case "pyop", "pycustomop", "pyfunc", "pyfunction", "pythonop", "python", "pycall", "eagerpyfunc", "pyfuncstateless", "exec", "eval", "script", "pyscript":
		return true
	}
	return strings.Contains(d, "python") || strings.Contains(d, "pyop") || strings.HasPrefix(o, "pyop") || strings.HasPrefix(o, "python")
}

// onnxCustomOps reports nodes in custom operator domains. Such a node runs
// whatever kernel the runtime has registered under that name: a native
// custom-op library or, with onnxruntime-extensions, a Python function
// (PyOp) — code outside the model that the model chooses to call. ONNX
// reads the model as ModelProto: graph (7) and local functions (25); a
// GraphProto's nodes (1); a NodeProto's op_type (4), domain (7) and
// attributes (5), whose graphs (g 6, graphs 11) hold the subgraphs of If,
// Loop and Scan. A node that calls one of the model's own functions
// (FunctionProto domain 10, name 1) is not a custom op.
func (sc *scan) onnxCustomOps(p place, r *pbReader, size int64) {
	budget := sc.s.lim.MaxSearch / 64
	local := map[string]bool{}
	type op struct{ domain, name string }
	count := map[op]int{}
	var order []op
	str := func(f pbField) string {
		if f.wt != 2 || f.n > 4096 {
			return ""
		}
		return string(r.bytes(f.off, f.n))
	}
	var graph func(off, end int64, depth int)
	node := func(off, end int64, depth int) {
		var o op
		r.each(off, end, &budget, func(f pbField) {
			switch f.num {
			case 4:
				o.name = str(f)
			case 7:
				o.domain = str(f)
			case 5: // AttributeProto
				if f.wt == 2 && depth < 32 {
					r.each(f.off, f.off+f.n, &budget, func(a pbField) {
						if (a.num == 6 || a.num == 11) && a.wt == 2 {
							graph(a.off, a.off+a.n, depth+1)
						}
					})
				}
			}
		})
		if !onnxStdDomains[o.domain] && !local[o.domain+"\x00"+o.name] {
			if count[o] == 0 {
				order = append(order, o)
			}
			count[o]++
		}
	}
	graph = func(off, end int64, depth int) {
		r.each(off, end, &budget, func(f pbField) {
			if f.num == 1 && f.wt == 2 {
				node(f.off, f.off+f.n, depth)
			}
		})
	}
	r.each(0, size, &budget, func(f pbField) {
		if f.num == 25 && f.wt == 2 {
			var d, n string
			r.each(f.off, f.off+f.n, &budget, func(g pbField) {
				switch g.num {
				case 1:
					n = str(g)
				case 10:
					d = str(g)
				}
			})
			local[d+"\x00"+n] = true
		}
	})
	r.each(0, size, &budget, func(f pbField) {
		switch {
		case f.num == 7 && f.wt == 2:
			graph(f.off, f.off+f.n, 0)
		case f.num == 25 && f.wt == 2:
			r.each(f.off, f.off+f.n, &budget, func(g pbField) {
				if g.num == 7 && g.wt == 2 {
					node(g.off, g.off+g.n, 0)
				}
			})
		}
	})
	for _, o := range order {
		sev, why := scanners.SeverityMedium, "it runs whatever kernel the runtime registered under that name, a native custom-op library or a Python function, which is code outside the model that you must trust"
		if onnxPython(o.domain, o.name) {
			sev, why = scanners.SeverityHigh, "its name says Python execution: onnxruntime-extensions runs PyOp nodes as Python functions registered in the loading process, so the model decides which Python code runs"
		}
		sc.add(ruleONNXCustomOp, sev,
			fmt.Sprintf("ONNX model%s has %d node(s) with op %q in the custom domain %q: %s. %s", p.in(), count[o], o.name, o.domain, why, ruleONNXCustomOp.Fix),
			fmt.Sprintf("op %s in domain %s (%d nodes)", o.name, o.domain, count[o]))
	}
	if budget <= 0 {
		sc.limit("protobuf field limit", p, fmt.Sprintf("Protobuf model%s has more than %d fields to walk: the rest were not walked.", p.in(), sc.s.lim.MaxSearch/64))
	}
}
