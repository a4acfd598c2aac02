package models

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mlwarden/mlwarden/scanners"
)

// writeSparseCheckpoint writes a PyTorch zip checkpoint whose pickle is pkl
// and whose one tensor member holds size bytes of zeros, as a sparse file
// (the hole costs no disk and no write time). The tensor's CRC is not
// computed: the scanner never reads tensor members.
func writeSparseCheckpoint(path string, pkl []byte, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	type ent struct {
		name string
		data []byte
		hole int64
		off  int64
		crc  uint32
	}
	ents := []*ent{{name: "archive/data.pkl", data: pkl}, {name: "archive/data/0", hole: size}, {name: "archive/version", data: []byte("3\n")}}
	var pos int64
	le := binary.LittleEndian
	for _, e := range ents {
		e.crc = crc32.ChecksumIEEE(e.data)
		e.off = pos
		n := int64(len(e.data)) + e.hole
		h := make([]byte, 30)
		le.PutUint32(h, sigLocal)
		le.PutUint16(h[4:], 20)
		le.PutUint32(h[14:], e.crc)
		le.PutUint32(h[18:], uint32(n))
		le.PutUint32(h[22:], uint32(n))
		le.PutUint16(h[26:], uint16(len(e.name)))
		f.Write(h)
		f.WriteString(e.name)
		f.Write(e.data)
		if e.hole > 0 {
			if _, err := f.Seek(e.hole, io.SeekCurrent); err != nil {
				return err
			}
		}
		pos += 30 + int64(len(e.name)) + n
	}
	cdStart := pos
	var cd bytes.Buffer
	for _, e := range ents {
		n := int64(len(e.data)) + e.hole
		h := make([]byte, 46)
		le.PutUint32(h, sigCentral)
		le.PutUint16(h[4:], 20)
		le.PutUint16(h[6:], 20)
		le.PutUint32(h[16:], e.crc)
		le.PutUint32(h[20:], uint32(n))
		le.PutUint32(h[24:], uint32(n))
		le.PutUint16(h[28:], uint16(len(e.name)))
		le.PutUint32(h[42:], uint32(e.off))
		cd.Write(h)
		cd.WriteString(e.name)
	}
	eocd := make([]byte, 22)
	le.PutUint32(eocd, sigEOCD)
	le.PutUint16(eocd[8:], uint16(len(ents)))
	le.PutUint16(eocd[10:], uint16(len(ents)))
	le.PutUint32(eocd[12:], uint32(cd.Len()))
	le.PutUint32(eocd[16:], uint32(cdStart))
	cd.Write(eocd)
	_, err = f.Write(cd.Bytes())
	return err
}

// realPickle returns the data.pkl of the benign state dict written by torch.
func realPickle(t testing.TB) []byte {
	zr, err := zip.OpenReader(filepath.Join(fixtures, "benign", "state_dict.pt"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if filepath.Base(f.Name) == "data.pkl" {
			rc, _ := f.Open()
			defer rc.Close()
			b, _ := io.ReadAll(rc)
			return b
		}
	}
	t.Fatal("no data.pkl")
	return nil
}

// TestGenBigCheckpoints writes the 200 MB and 2 GB checkpoints (same pickle)
// for the whole-process measurement, into $MODELS_BIG_DIR.
func TestGenBigCheckpoints(t *testing.T) {
	dir := os.Getenv("MODELS_BIG_DIR")
	if dir == "" {
		t.Skip("set MODELS_BIG_DIR to write the sparse 200 MB and 2 GB checkpoints")
	}
	pkl := realPickle(t)
	for name, size := range map[string]int64{"ckpt_200M.pt": 200 << 20, "ckpt_2G.pt": 2000 << 20} {
		if err := writeSparseCheckpoint(filepath.Join(dir, name), pkl, size); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointSizeIndependent: scanning a 2 GB checkpoint reads its
// pickle and directory only, so it takes about as long as a 200 MB one.
func TestCheckpointSizeIndependent(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	pkl := realPickle(t)
	s := New()
	var took []time.Duration
	for _, size := range []int64{200 << 20, 2000 << 20} {
		p := filepath.Join(dir, fmt.Sprintf("c%d.pt", size))
		if err := writeSparseCheckpoint(p, pkl, size); err != nil {
			t.Skipf("cannot write a sparse file here: %v", err)
		}
		start := time.Now()
		var fs []scanners.Finding
		for i := 0; i < 20; i++ {
			fs, _ = scanFile(t, s, p)
		}
		took = append(took, time.Since(start)/20)
		for _, f := range fs {
			if f.Severity > scanners.SeverityLow {
				t.Errorf("%s: %s %s", p, f.RuleID, f.Message)
			}
		}
	}
	t.Logf("200 MB: %v, 2 GB: %v per scan", took[0], took[1])
	if took[1] > 10*took[0]+50*time.Millisecond {
		t.Errorf("scan time grows with tensor bytes: %v vs %v", took[0], took[1])
	}
}

// BenchmarkCorpus scans every fixture (about 90 mixed model files) once
// per iteration; files/s = 90 / (ns/op).
func BenchmarkCorpus(b *testing.B) {
	var files []string
	for _, d := range []string{"benign", "malicious", "bypass"} {
		files = append(files, walkFixtures(b, d)...)
	}
	s := New()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range files {
			scanFile(b, s, p)
		}
	}
	b.ReportMetric(float64(len(files)*b.N)/b.Elapsed().Seconds(), "files/s")
}
