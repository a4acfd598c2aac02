package secrets

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/reports"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/scannertest"
)

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
	mem := map[string][]byte{}
	for p, c := range files {
		mem[p] = []byte(c)
	}
	res := scannertest.Run(t, scannertest.Source("leaky-repo", scannertest.MapFS(mem)), s)
	if len(res.Findings) < len(files) {
		t.Fatalf("only %d findings", len(res.Findings))
	}
	for _, format := range reportFormats {
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
