package models

import (
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/scanners"
)

// Describe names a model file and its format for the bill of materials
// (scanners.Describer): a file in a model format by its content (pickle,
// PyTorch, NumPy, GGUF, safetensors, joblib), or one whose name promises a
// model (.pt, .onnx, .h5, .keras, ...). Archives and text are not models
// unless so named; a Python path file (.pth that is text) is not one.
func (s *Scanner) Describe(a *scanners.Artifact, head []byte) (scanners.Component, bool) {
	if a.Kind != "" && a.Kind != scanners.ArtifactFile {
		return scanners.Component{}, false
	}
	f := sniff(head, a.Size, a.Path)
	named := modelName(a.Path)
	switch f {
	case fmtPickle, fmtTorchLegacy, fmtNpy, fmtGGUF, fmtSafetensors, fmtJoblibZF:
	case fmtUnknown:
		if !named || sitePathFile(a.Path, head) {
			return scanners.Component{}, false
		}
	default:
		if !named {
			return scanners.Component{}, false
		}
	}
	return scanners.Component{Kind: scanners.ComponentModel, Name: path.Base(a.Path), Format: formatName(f, a.Path)}, true
}

// formatName is the format as a reader of a BOM knows it: the container
// format said with what the name says it holds.
func formatName(f format, name string) string {
	ext := strings.ToLower(path.Ext(name))
	switch {
	case f == fmtZip && (ext == ".pt" || ext == ".pth" || ext == ".ckpt" || ext == ".bin"):
		return "PyTorch (zip)"
	case f == fmtZip && ext == ".keras":
		return "Keras (zip)"
	case f == fmtZip && ext == ".npz":
		return "NumPy npz"
	case f == fmtProtobuf && ext == ".onnx", f == fmtUnknown && ext == ".onnx":
		return "ONNX"
	case f == fmtHDF5 && (ext == ".h5" || ext == ".keras" || ext == ".hdf5"):
		return "HDF5 (Keras)"
	case f == fmtPickle && ext == ".joblib":
		return "joblib (pickle)"
	case f == fmtUnknown:
		return "unknown (" + ext + ")"
	}
	return f.String()
}
