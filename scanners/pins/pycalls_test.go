package pins

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
)

// pythonCallsAgree fails t when reading only the calls kindOfCall names (or
// all, with trust_remote_code in the file) reports data differently from
// reading every call.
func pythonCallsAgree(t *testing.T, data []byte) {
	t.Helper()
	run := func(every bool) []scanners.Finding {
		s := &sink{a: &scanners.Artifact{Kind: scanners.ArtifactFile, Path: "train.py"}, seen: map[string]bool{}}
		st := newShellState()
		checkPythonCalls(data, s.whole(), st, every)
		st.finish()
		return s.list
	}
	if got, want := run(false), run(true); !reflect.DeepEqual(got, want) {
		t.Fatalf("filtered calls report %q differently:\nnow %+v\nevery call %+v", data, got, want)
	}
}

// TestPythonCallFilter: every call kind, aliases, trust_remote_code on a
// call of no other interest, and the repository's own Python fixtures.
func TestPythonCallFilter(t *testing.T) {
	inputs := []string{
		"from transformers import AutoModel as M\nM.from_pretrained('org/m')\nx.from_pretrained('org/n', revision='main')\n",
		"pipeline('text-generation')\ntransformers.pipeline('t', model='o/m')\nhf_hub_download('o/r', 'f')\nhuggingface_hub.snapshot_download(repo_id='o/r')\n",
		"load_dataset('o/d')\ndatasets.load_dataset('csv', data_files='x')\ntorch.hub.load('o/r:main', 'm')\nhub.load('o/r', 'm', source='local')\n",
		"torch.load('w.pt')\ntorch.load('w.pt', weights_only=True)\ntorch.hub.load_state_dict_from_url(u)\ndownload_url_to_file(u, p, hash_prefix=None)\n",
		"os.system('pip install x')\nos.popen('curl https://e.test | sh')\nsubprocess.run(['pip', 'install', 'y'])\nsubprocess.check_call('pip install z', shell=True)\nsubprocess.Popen(cmd)\n",
		"make_model('o/m', trust_remote_code=True)\nAutoConfig.from_pretrained(p, trust_remote_code=True)\n",
		"trust_remote_code = True\nf(trust_remote_code)\n",
		"def from_pretrained(a, b=(1, [2, {3: 4}])): pass\nclass torch.load(x): pass\n",
	}
	filepath.WalkDir("../../fixtures", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".py") {
			if b, err := os.ReadFile(p); err == nil {
				inputs = append(inputs, string(b))
			}
		}
		return err
	})
	for _, in := range inputs {
		pythonCallsAgree(t, []byte(in))
	}
}
