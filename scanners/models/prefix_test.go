package models

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// streamSource hands one file as a plain reader, as an image layer does.
type streamSource struct {
	name string
	data []byte
}

func (s streamSource) Target() scanners.Target {
	return scanners.Target{Name: "img", Kind: scanners.KindImage}
}

func (s streamSource) Walk(ctx context.Context, sink scanners.Sink) error {
	a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "img", TargetKind: scanners.KindImage, Path: s.name, Size: int64(len(s.data))}
	return sink.Artifact(a, io.LimitReader(bytes.NewReader(s.data), int64(len(s.data))))
}

// safetensorsFile is a header, padding and size bytes of data.
func safetensorsFile(header string, pad int, size int) []byte {
	h := header + string(bytes.Repeat([]byte(" "), pad))
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(h)))
	b.WriteString(h)
	b.Write(make([]byte, size))
	return b.Bytes()
}

// TestSafetensorsStreamedPrefix: a large safetensors file streamed from an
// image is read only up to the end of its header (the spool directory does
// not exist, so a spooled file would be an error) and reports what the same
// file read whole reports, with the whole file's digest as its component.
func TestSafetensorsStreamedPrefix(t *testing.T) {
	const data = 3 << 20
	tensor := func(offs ...int64) string {
		b, _ := json.Marshal(map[string]any{"dtype": "F32", "shape": []int64{(offs[1] - offs[0]) / 4}, "data_offsets": offs})
		return string(b)
	}
	cases := map[string][]byte{
		"valid":       safetensorsFile(`{"w":`+tensor(0, data)+`}`, 0, data),
		"padded":      safetensorsFile(`{"__metadata__":{"format":"pt"},"w":`+tensor(0, data)+`}`, 5, data),
		"overlap":     safetensorsFile(`{"a":`+tensor(0, data)+`,"b":`+tensor(8, data)+`}`, 0, data),
		"short":       safetensorsFile(`{"w":`+tensor(0, data-8)+`}`, 0, data),
		"junk after":  safetensorsFile(`{"w":`+tensor(0, data)+`}x`, 3, data),
		"long header": safetensorsFile(`{"__metadata__":{"k":"`+string(bytes.Repeat([]byte("v"), 200<<10))+`"},"a":`+tensor(0, data)+`,"b":`+tensor(8, data)+`}`, 0, data),
		"big header":  safetensorsFile(`{"__metadata__":{"k":"`+string(bytes.Repeat([]byte("v"), 2<<20))+`"},"w":`+tensor(0, data)+`}`, 0, data),
	}
	nowhere := filepath.Join(t.TempDir(), "absent")
	for name, file := range cases {
		t.Run(name, func(t *testing.T) {
			opts := []scanners.Option{scanners.WithMemoryLimit(1 << 20), scanners.WithComponentHashes(true), scanners.WithTempDir(nowhere)}
			streamed := scanners.NewDispatcher([]scanners.Scanner{New()}, opts...).Run(context.Background(), streamSource{"w/model.safetensors", file})
			whole, err := scanners.ScanBytes(context.Background(), New(), &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "img", TargetKind: scanners.KindImage, Path: "w/model.safetensors"}, file)
			if err != nil {
				t.Fatal(err)
			}
			if name == "big header" {
				// A header past the memory limit is spooled: here, an error.
				if len(streamed.Errors) != 1 {
					t.Fatalf("errors %+v, want the spool's", streamed.Errors)
				}
				return
			}
			if len(streamed.Errors) != 0 {
				t.Fatalf("errors %+v", streamed.Errors)
			}
			rules := func(fs []scanners.Finding) (out []string) {
				for _, f := range fs {
					if strings.HasPrefix(f.RuleID, "models/license-") {
						continue // judged per target: the image has no card, the file alone is no target
					}
					out = append(out, f.RuleID+" "+f.Message)
				}
				return out
			}
			if got, want := rules(streamed.Findings), rules(whole); !slices.Equal(got, want) {
				t.Errorf("streamed %q\nwhole %q", got, want)
			}
			if (name == "valid" || name == "padded") != (len(whole) == 0) || name == "long header" && len(whole) != 1 {
				t.Errorf("whole: %q", rules(whole))
			}
			if len(streamed.Components) != 1 || streamed.Components[0].Size != int64(len(file)) || streamed.Components[0].SHA256 == "" {
				t.Errorf("components %+v", streamed.Components)
			}
		})
	}
}

// TestStringsOnlyStreamedPrefix: the strings-only reading (--checks
// secrets) declares the same prefix, so a large streamed safetensors file is
// not spooled there either, and its metadata still reaches the secrets
// check.
func TestStringsOnlyStreamedPrefix(t *testing.T) {
	const data = 3 << 20
	file := safetensorsFile(`{"__metadata__":{"note":"marker"},"w":{"dtype":"F32","shape":[786432],"data_offsets":[0,3145728]}}`, 0, data)
	c := &capture{}
	res := scanners.NewDispatcher([]scanners.Scanner{StringsOnly(c.scan)}, scanners.WithMemoryLimit(1<<20), scanners.WithTempDir(filepath.Join(t.TempDir(), "absent"))).
		Run(context.Background(), streamSource{"w/model.safetensors", file})
	if len(res.Errors) != 0 || len(res.Findings) != 1 || !slices.ContainsFunc(c.data, func(d string) bool { return bytes.Contains([]byte(d), []byte("marker")) }) {
		t.Fatalf("errors %+v findings %+v strings %q", res.Errors, res.Findings, c.data)
	}
}
