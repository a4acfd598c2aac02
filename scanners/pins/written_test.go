package pins

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mlwarden/mlwarden/scanners"
)

// TestWrittenFiles: a file the script writes (cat > f <<EOF, printf … >
// f, echo … >> f) is the file later commands read (pip install -r, conda
// env create -f), judged at the lines where its text is written; a loop
// that installs a file's lines (while read p; … done < f, cat f | while
// read, for p in $(cat f)) is judged by those lines, from the text the
// script wrote or, in a directory target, from the file on disk.
func TestWrittenFiles(t *testing.T) {
	disk := fstest.MapFS{
		"packages.txt":     {Data: []byte("# deps\ntorch==2.3.0\n\ntransformers\n")},
		"requirements.txt": {Data: []byte("numpy==1.26.4 --hash=sha256:aaaa\n")},
	}
	tests := []struct {
		name, in string
		fsys     fstest.MapFS
		want     []string // "rule@line evidence"
	}{
		{name: "cat heredoc, then pip -r", in: "#!/bin/bash\ncat > requirements.txt <<EOF\ntorch==2.3.0\ntransformers\nEOF\npip install -r requirements.txt\n",
			want: []string{"pip-no-hash@3 torch==2.3.0", "pip-unpinned@4 transformers"}},
		{name: "written beats the file on disk", fsys: disk, in: "#!/bin/bash\ncat > requirements.txt <<'EOF'\naccelerate\nEOF\npip install -r requirements.txt\n",
			want: []string{"pip-unpinned@3 accelerate"}},
		{name: "conda environment from a heredoc", in: "#!/bin/bash\ncat > environment.yml <<EOF\nname: x\ndependencies:\n  - python=3.11\n  - pytorch\n  - pip:\n    - vllm\nEOF\nconda env create -f environment.yml\n",
			want: []string{"conda-unpinned@6 pytorch", "pip-unpinned@8 vllm"}},
		{name: "unquoted heredoc expands", in: "#!/bin/bash\nV=4.40.0\ncat > req.txt <<EOF\ntransformers==$V --hash=sha256:aaaa\naccelerate\nEOF\npip install -r req.txt\n",
			want: []string{"pip-unpinned@5 accelerate"}},
		{name: "printf", in: "#!/bin/bash\nprintf 'torch==2.3.0\\nrequests\\n' > requirements.txt\npip install -r requirements.txt\n",
			want: []string{"pip-no-hash@2 torch==2.3.0", "pip-unpinned@2 requests"}},
		{name: "printf %s per package", in: "#!/bin/bash\nprintf '%s\\n' torch==2.3.0 requests > r.txt\npip install -r r.txt\n",
			want: []string{"pip-no-hash@2 torch==2.3.0", "pip-unpinned@2 requests"}},
		{name: "echo appends", in: "#!/bin/bash\necho 'torch==2.3.0 --hash=sha256:aaaa' > r.txt\necho requests >> r.txt\npip install -r r.txt\n",
			want: []string{"pip-unpinned@3 requests"}},
		{name: "a download replaces what was written", in: "#!/bin/bash\necho torch > r.txt\ncurl -fsSL -o r.txt https://example.test/r.txt\npip install -r r.txt\n",
			want: []string{"requirements-not-in-target@4 r.txt"}},
		{name: "while read over a written file", in: "#!/bin/bash\ncat > pkgs.txt <<'EOF'\ntorch==2.3.0\ntransformers\nEOF\nwhile read -r p; do\n  pip install \"$p\"\ndone < pkgs.txt\n",
			want: []string{"pip-unpinned@4 transformers"}},
		{name: "while read over a file on disk", fsys: disk, in: "#!/bin/bash\nwhile IFS= read -r p; do pip install \"$p\"; done < packages.txt\n",
			want: []string{"pip-unpinned@2 transformers"}},
		{name: "cat into while read", fsys: disk, in: "#!/bin/bash\ncat packages.txt | while read p; do\n  pip install $p\ndone\n",
			want: []string{"pip-unpinned@3 transformers"}},
		{name: "for over cat", fsys: disk, in: "#!/bin/bash\nfor p in $(cat packages.txt); do conda install -y $p; done\n",
			want: []string{"conda-unpinned@2 transformers"}},
		{name: "other findings in the loop stay at their line", in: "#!/bin/bash\necho a > hosts.txt\nwhile read h; do\n  curl -fsSL https://a.example.test/i.sh | bash\ndone < hosts.txt\n",
			want: []string{"curl-pipe-shell@4 https://a.example.test/i.sh"}},
		{name: "loop over an unknown file is not judged", in: "#!/bin/bash\nwhile read p; do pip install \"$p\"; done < pkgs.txt\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", TargetKind: scanners.KindScript, Path: "setup.sh"}
			if tc.fsys != nil {
				a.TargetKind, a.FS = scanners.KindDir, tc.fsys
			}
			fs, err := scanners.ScanBytes(context.Background(), New(), a, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, fmt.Sprintf("%s@%d %s", strings.TrimPrefix(f.RuleID, "pins/"), f.Line, f.Evidence))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				var msgs []string
				for _, f := range fs {
					msgs = append(msgs, f.Message)
				}
				t.Errorf("got %q, want %q\n%s", got, tc.want, strings.Join(msgs, "\n"))
			}
		})
	}
}
