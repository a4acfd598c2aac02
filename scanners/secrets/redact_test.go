package secrets

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
)

// redactSource hands over files from memory.
type redactSource struct {
	files map[string]string
}

func (s redactSource) Target() scanners.Target {
	return scanners.Target{Name: "leaky-repo", Kind: scanners.KindDir}
}

func (s redactSource) Walk(ctx context.Context, sink scanners.Sink) error {
	for p, c := range s.files {
		a := &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "leaky-repo", TargetKind: scanners.KindDir, Path: p, Size: int64(len(c))}
		if err := sink.Artifact(a, strings.NewReader(c)); err != nil {
			return err
		}
	}
	return nil
}

// TestNoSecretInAnyOutput plants secrets in every place the check looks and
// greps every report format for them (and for their long substrings).
func TestNoSecretInAnyOutput(t *testing.T) {
	s := newScanner(t)
	g := newFake(42)
	planted := []string{
		"hf_" + g.str(alnum, 34),
		g.hex(40),
		"nvapi-" + g.str(urlTok, 64),
		"sk-proj-" + g.str(urlTok, 74) + "T3BlbkFJ" + g.str(urlTok, 74),
		g.str(alnum, 16),
		"AKIA" + g.str(awsID, 16),
	}
	files := map[string]string{
		"job.sbatch":   "#SBATCH --export=ALL,WANDB_API_KEY=" + planted[1] + "\nexport HF_TOKEN=" + planted[0] + "\n",
		"nb.ipynb":     notebook(planted[0]),
		"Dockerfile":   "FROM x\nENV NVIDIA_API_KEY=" + planted[2] + "\n",
		"app.py":       "OpenAI(api_key=\"" + planted[3] + "\")\n",
		"mlflow.env":   "MLFLOW_TRACKING_URI=https://alice:" + planted[4] + "@mlflow.example.org\n",
		"aws/creds.sh": "export AWS_ACCESS_KEY_ID=" + planted[5] + "\n",
	}
	res := scanners.NewDispatcher([]scanners.Scanner{s}).Run(context.Background(), redactSource{files})
	if len(res.Findings) < len(files) {
		t.Fatalf("only %d findings", len(res.Findings))
	}
	for _, format := range reports.Formats {
		var buf bytes.Buffer
		if err := reports.Write(&buf, format, res, reports.Options{Rules: s.Rules()}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		out := buf.String()
		for _, p := range planted {
			// Any 8 consecutive characters of a secret is a leak.
			for i := 0; i+8 <= len(p); i++ {
				if strings.Contains(out, p[i:i+8]) {
					t.Errorf("%s report holds part of a planted secret (%q…)", format, scanners.Redact(p))
					break
				}
			}
		}
	}
}
