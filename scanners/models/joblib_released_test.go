package models

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

// joblibTestData is where Debian's python3-joblib installs joblib's own test
// data: pickles written by released joblib versions (0.8.4 to 0.11) with
// Python 2.7 to 3.6 and every compression joblib offered.
const joblibTestData = "/usr/lib/python3/dist-packages/joblib/test/data"

// TestJoblibReleasedFormats: files written by old joblib releases are read to
// their end — inline arrays without the alignment padding joblib 1.2 added,
// the zfile format of joblib < 0.10 (0.8 pads its header one byte more),
// numpy.matrix — and give nothing above low.
func TestJoblibReleasedFormats(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(joblibTestData, "joblib_*"))
	if len(files) == 0 {
		msg := "joblib's test data is missing (apt-get install python3-joblib)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := New()
	missing := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Kind: scanners.ArtifactFile, Path: filepath.Base(p)}, data)
		if err != nil {
			t.Fatal(err)
		}
		if scannertest.DecoderMissing(fs) {
			missing++
			continue // xz, zstd: not in mlwarden-sbatch's build
		}
		for _, f := range fs {
			if f.Severity > scanners.SeverityLow {
				t.Errorf("%s: %s %s: %s", filepath.Base(p), f.RuleID, f.Severity, f.Message)
			}
		}
	}
	t.Logf("%d joblib files read (%d skipped: their decoder is not in this build)", len(files), missing)
}
