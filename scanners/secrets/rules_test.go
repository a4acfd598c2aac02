package secrets

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

func newScanner(t testing.TB, opts ...Option) *Scanner {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scan(t testing.TB, s *Scanner, path, content string) []scanners.Finding {
	t.Helper()
	fs, err := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Kind: scanners.ArtifactFile, Target: "t", Path: path}, []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

type ruleCase struct {
	rule string // expected rule ID
	path string
	// pos and neg build the positive and negative content from a generator;
	// pos also returns the secret that must be found.
	pos func(g *fakeGen) (content, secret string)
	neg func(g *fakeGen) string
}

var ruleCases = []ruleCase{
	{"secrets/huggingface-token", "train.sh",
		func(g *fakeGen) (string, string) {
			t := "hf_" + g.str(alnum, 34)
			return "export HF_TOKEN=" + t + "\n", t
		},
		func(g *fakeGen) string {
			return "export HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nexport HF_TOKEN=${HF_TOKEN}\ntoken = os.environ[\"HF_TOKEN\"]\n"
		}},
	{"secrets/huggingface-token", "download.py",
		func(g *fakeGen) (string, string) {
			t := "hf_" + g.str(alnum, 34)
			return "snapshot_download(repo, token=\"" + t + "\")\nurl = 'https://user:" + t + "@hub.example.com/org/model'\n", t
		},
		func(g *fakeGen) string { return "snapshot_download(repo, token=\"<YOUR_TOKEN>\")\n" }},
	{"secrets/huggingface-org-token", "cfg.yaml",
		func(g *fakeGen) (string, string) {
			t := "api_org_" + g.str(alnum, 34)
			return "hf_token: " + t + "\n", t
		},
		func(g *fakeGen) string { return "hf_token: api_org_" + g.str(alnum, 20) + "\n" }},
	{"secrets/wandb-api-key", ".env",
		func(g *fakeGen) (string, string) {
			t := "wandb_v1_" + g.str(alnum, 27) + "_" + g.str(alnum, 49)
			return "WANDB_API_KEY=" + t + "\n", t
		},
		func(g *fakeGen) string {
			return "WANDB_API_KEY=wandb_v1_xxxxxxxxxxxxxxxxxxxxxxxxxxx_xxxxxxxxxx\nWANDB_API_KEY=<your-api-key>\n"
		}},
	{"secrets/wandb-api-key-legacy", "job.sbatch",
		func(g *fakeGen) (string, string) {
			t := g.hex(40)
			return "#!/bin/bash\n#SBATCH --export=ALL,WANDB_API_KEY=" + t + ",OMP_NUM_THREADS=8\nsrun python train.py\n", t
		},
		func(g *fakeGen) string {
			return "pip install git+https://github.com/wandb/wandb.git@" + g.hex(40) + "\nwandb login\n"
		}},
	{"secrets/wandb-api-key-legacy", "home/.netrc",
		func(g *fakeGen) (string, string) {
			t := g.hex(40)
			return "machine api.wandb.ai login user password " + t + "\n", t
		},
		func(g *fakeGen) string { return "machine api.wandb.ai\n  login user\n  password $WANDB_API_KEY\n" }},
	{"secrets/nvidia-api-key", "Dockerfile",
		func(g *fakeGen) (string, string) {
			t := "nvapi-" + g.str(urlTok, 64)
			return "ENV NVIDIA_API_KEY=" + t + "\n", t
		},
		func(g *fakeGen) string {
			return "ENV NVIDIA_API_KEY=nvapi-xxxxxxxxxxxxxxxxxxxxxxxx\nARG NVIDIA_API_KEY\nENV NGC_API_KEY=${NGC_API_KEY}\n"
		}},
	{"secrets/ngc-api-key", "login.sh",
		func(g *fakeGen) (string, string) {
			t := g.ngcLegacy()
			return "docker login registry.example.com -u '$oauthtoken' -p " + t + "\n", t
		},
		func(g *fakeGen) string {
			return "docker login registry.example.com -u '$oauthtoken' --password-stdin < ~/.ngc/key\n"
		}},
	{"secrets/openai-api-key", "app.py",
		func(g *fakeGen) (string, string) {
			t := "sk-proj-" + g.str(urlTok, 74) + "T3BlbkFJ" + g.str(urlTok, 74)
			return "client = OpenAI(api_key=\"" + t + "\")\n", t
		},
		func(g *fakeGen) string { return "client = OpenAI(api_key=os.environ[\"OPENAI_API_KEY\"])\n" }},
	{"secrets/openai-api-key", "legacy.py",
		func(g *fakeGen) (string, string) {
			t := "sk-" + g.str(alnum, 20) + "T3BlbkFJ" + g.str(alnum, 20)
			return "openai.api_key = '" + t + "'\n", t
		},
		func(g *fakeGen) string { return "openai.api_key = 'sk-...'\n" }},
	{"secrets/anthropic-api-key", "agent.py",
		func(g *fakeGen) (string, string) {
			t := "sk-ant-api03-" + g.str(urlTok, 93) + "AA"
			return "ANTHROPIC_API_KEY = \"" + t + "\"\n", t
		},
		func(g *fakeGen) string { return "ANTHROPIC_API_KEY = \"sk-ant-api03-" + g.str(urlTok, 50) + "\"\n" }},
	{"secrets/replicate-api-token", "run.sh",
		func(g *fakeGen) (string, string) {
			t := "r8_" + g.str(alnum, 37)
			return "export REPLICATE_API_TOKEN=" + t + "\n", t
		},
		func(g *fakeGen) string {
			return "export REPLICATE_API_TOKEN=r8_****\nexport REPLICATE_API_TOKEN=\"$(cat ~/.replicate)\"\n"
		}},
	{"secrets/cohere-api-key", "config.toml",
		func(g *fakeGen) (string, string) { t := g.str(alnum, 40); return "cohere_api_key = \"" + t + "\"\n", t },
		func(g *fakeGen) string { return "cohere_api_key = \"${CO_API_KEY}\"\n" }},
	{"secrets/mistral-api-key", ".env",
		func(g *fakeGen) (string, string) { t := g.str(alnum, 32); return "MISTRAL_API_KEY=" + t + "\n", t },
		func(g *fakeGen) string { return "MISTRAL_MODEL=mistral-large-latest\n" }},
	{"secrets/groq-api-key", "chat.py",
		func(g *fakeGen) (string, string) {
			t := "gsk_" + g.str(alnum, 52)
			return "Groq(api_key='" + t + "')\n", t
		},
		func(g *fakeGen) string { return "Groq(api_key='gsk_your_key_here')\n" }},
	{"secrets/together-api-key", "infer.yaml",
		func(g *fakeGen) (string, string) {
			t := "tgp_v1_" + g.str(urlTok, 43)
			return "together_api_key: " + t + "\n", t
		},
		func(g *fakeGen) string { return "together_api_key: ${TOGETHER_API_KEY}\n" }},
	{"secrets/together-api-key", "infer.env",
		func(g *fakeGen) (string, string) { t := g.hex(64); return "TOGETHER_API_KEY=" + t + "\n", t },
		func(g *fakeGen) string { return "TOGETHER_MODEL=" + g.hex(10) + "\n" }},
	{"secrets/pinecone-api-key", "rag.py",
		func(g *fakeGen) (string, string) {
			t := "pcsk_" + g.str(alnum, 6) + "_" + g.str(alnum, 63)
			return "pc = Pinecone(api_key=\"" + t + "\")\n", t
		},
		func(g *fakeGen) string { return "index_id = \"" + g.uuid() + "\"\n" }},
	{"secrets/pinecone-api-key", "rag.env",
		func(g *fakeGen) (string, string) { t := g.uuid(); return "PINECONE_API_KEY=" + t + "\n", t },
		func(g *fakeGen) string { return "RUN_ID=" + g.uuid() + "\n" }},
	{"secrets/langsmith-api-key", ".env",
		func(g *fakeGen) (string, string) {
			t := "lsv2_pt_" + g.hex(32) + "_" + g.hex(10)
			return "LANGSMITH_API_KEY=" + t + "\n", t
		},
		func(g *fakeGen) string { return "LANGSMITH_PROJECT=lsv2_demo\n" }},
	{"secrets/kaggle-api-token", "setup.sh",
		func(g *fakeGen) (string, string) {
			t := "KGAT_" + g.hex(32)
			return "export KAGGLE_API_TOKEN=" + t + "\n", t
		},
		func(g *fakeGen) string { return "export KAGGLE_API_TOKEN=KGAT_xxxxxxxxxxxxxxxx\n" }},
	{"secrets/kaggle-api-key", "kaggle.json",
		func(g *fakeGen) (string, string) { t := g.hex(32); return `{"username":"alice","key":"` + t + `"}`, t },
		func(g *fakeGen) string { return `{"username":"alice","key":"<your kaggle key>"}` }},
	{"secrets/comet-api-key", "exp.py",
		func(g *fakeGen) (string, string) { t := g.str(alnum, 25); return "COMET_API_KEY = \"" + t + "\"\n", t },
		func(g *fakeGen) string { return "COMET_PROJECT = \"resnet-ablation\"\n" }},
	{"secrets/neptune-api-token", "neptune.sh",
		func(g *fakeGen) (string, string) {
			t := g.neptune()
			return "export NEPTUNE_API_TOKEN=\"" + t + "\"\n", t
		},
		func(g *fakeGen) string { return "export NEPTUNE_API_TOKEN=\"ANONYMOUS\"\n" }},
	{"secrets/databricks-token", "dbx.cfg",
		func(g *fakeGen) (string, string) { t := "dapi" + g.hex(32); return "token = " + t + "\n", t },
		func(g *fakeGen) string { return "token = dapi" + strings.Repeat("0", 32) + "\n" }},
	{"secrets/mlflow-tracking-credentials", "mlflow.env",
		func(g *fakeGen) (string, string) {
			t := g.str(alnum, 16)
			return "MLFLOW_TRACKING_URI=https://alice:" + t + "@mlflow.internal.example\n", t
		},
		func(g *fakeGen) string { return "MLFLOW_TRACKING_URI=https://mlflow.internal.example\n" }},
	{"secrets/mlflow-tracking-credentials", "mlflow.sh",
		func(g *fakeGen) (string, string) {
			t := g.str(alnum, 14)
			return "export MLFLOW_TRACKING_PASSWORD=" + t + "\n", t
		},
		func(g *fakeGen) string { return "export MLFLOW_TRACKING_PASSWORD=${MLFLOW_PASSWORD}\n" }},
	{"secrets/url-credentials", "pip.conf",
		func(g *fakeGen) (string, string) {
			t := g.str(alnum, 18)
			return "[global]\nextra-index-url = https://build:" + t + "@pypi.internal.example/simple\n", t
		},
		func(g *fakeGen) string {
			return "extra-index-url = https://build:${PIP_PASSWORD}@pypi.internal.example/simple\n"
		}},
	{"secrets/azure-storage-account-key", "blob.py",
		func(g *fakeGen) (string, string) {
			t := g.azureKey()
			return `conn = "DefaultEndpointsProtocol=https;AccountName=mldata;AccountKey=` + t + `;EndpointSuffix=core.windows.net"` + "\n", t
		},
		func(g *fakeGen) string {
			return `conn = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"` + "\n"
		}},
	{"secrets/gcp-service-account-key", "sa.json",
		func(g *fakeGen) (string, string) {
			k := g.pemKey()
			b, _ := json.MarshalIndent(map[string]string{
				"type": "service_account", "project_id": "ml-proj", "private_key_id": g.hex(40),
				"private_key": k, "client_email": "trainer@ml-proj.iam.gserviceaccount.com",
			}, "", "  ")
			return string(b), strings.ReplaceAll(strings.TrimSpace(k), "\n", `\n`)
		},
		func(g *fakeGen) string { return `{"type": "service_account", "private_key": ""}` }},
	{"secrets/private-key", "id_ecdsa",
		func(g *fakeGen) (string, string) { k := g.pemKey(); return k, strings.TrimSpace(k) },
		func(g *fakeGen) string { return "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n" }},
	{"secrets/aws-access-key-id", "aws.sh",
		func(g *fakeGen) (string, string) {
			t := "AKIA" + g.str(awsID, 16)
			return "export AWS_ACCESS_KEY_ID=" + t + "\n", t
		},
		func(g *fakeGen) string { return "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n" }},
	{"secrets/aws-secret-access-key", "credentials",
		func(g *fakeGen) (string, string) {
			t := g.str(alnum+"/+", 40)
			return "[default]\naws_secret_access_key = " + t + "\n", t
		},
		func(g *fakeGen) string {
			return "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
		}},
	{"secrets/docker-config-auth", "config.json",
		func(g *fakeGen) (string, string) {
			t := base64.StdEncoding.EncodeToString([]byte("ci-bot:" + g.str(alnum, 20)))
			return `{"auths":{"registry.internal.example":{"auth":"` + t + `"}}}`, t
		},
		func(g *fakeGen) string { return `{"auths":{"registry.internal.example":{}},"credsStore":"pass"}` }},
	{"secrets/dockerhub-pat", "push.sh",
		func(g *fakeGen) (string, string) {
			t := "dckr_pat_" + g.str(urlTok, 27)
			return "echo " + t + " | docker login -u bot --password-stdin\n", t
		},
		func(g *fakeGen) string { return "echo $DOCKERHUB_TOKEN | docker login -u bot --password-stdin\n" }},
	{"secrets/netrc-password", ".netrc",
		func(g *fakeGen) (string, string) {
			t := g.str(alnum, 20)
			return "machine git.internal.example login bot password " + t + "\n", t
		},
		func(g *fakeGen) string { return "machine git.internal.example login bot password changeme\n" }},
	{"secrets/xai-api-key", "grok.py",
		func(g *fakeGen) (string, string) {
			t := "xai-" + g.str(alnum, 80)
			return "XAI_API_KEY = '" + t + "'\n", t
		},
		func(g *fakeGen) string { return "XAI_API_KEY = 'xai-...'\n" }},
	{"secrets/openrouter-api-key", "router.ts",
		func(g *fakeGen) (string, string) {
			t := "sk-or-v1-" + g.hex(64)
			return "const key = \"" + t + "\";\n", t
		},
		func(g *fakeGen) string { return "const key = process.env.OPENROUTER_API_KEY;\n" }},
	// Issue 16: formats peers know.
	{"secrets/huggingface-legacy-token", "push.sh",
		func(g *fakeGen) (string, string) {
			t := "api_" + g.str(alnum, 34)
			return "git push https://alice:" + t + "@huggingface.co/org/model main\n", t
		},
		func(g *fakeGen) string {
			// api_ + 34 alone is an identifier shape, not a token.
			return "result = api_" + g.str(alnum, 34) + "(x)\ngit push https://huggingface.co/org/model main\n"
		}},
	{"secrets/huggingface-legacy-token", "train.sh",
		func(g *fakeGen) (string, string) {
			t := "api_" + g.str(alnum, 34)
			return "export HF_TOKEN=" + t + "\n", t
		},
		func(g *fakeGen) string { return "export HF_TOKEN=api_" + strings.Repeat("x", 34) + "\n" }},
	{"secrets/huggingface-org-token", "push.sh",
		func(g *fakeGen) (string, string) {
			t := "api_org_" + g.str(alnum, 34)
			return "git remote set-url origin https://bot:" + t + "@huggingface.co/org/model\n", t
		},
		func(g *fakeGen) string { return "git remote set-url origin https://huggingface.co/org/model\n" }},
	{"secrets/github-app-token", "ci.sh",
		func(g *fakeGen) (string, string) {
			t := "ghs_eyJ" + g.str(urlTok, 30) + "." + "eyJ" + g.str(urlTok, 120) + "." + g.str(urlTok, 43)
			return "export GITHUB_TOKEN=" + t + "\n", t
		},
		func(g *fakeGen) string {
			return "# installation tokens: ghs_<header>.<payload>.<signature>\nversion = \"ghs_" + g.str(alnum, 10) + ".x.y\"\n"
		}},
	{"secrets/github-oauth", "auth.py",
		func(g *fakeGen) (string, string) {
			t := "gho_" + g.str(alnum, 36)
			return "token = \"" + t + "\"\n", t
		},
		func(g *fakeGen) string {
			// gho_ inside a longer word (a left word boundary is required).
			return "name = \"Sogho_" + g.str(alnum, 36) + "\"\n"
		}},
	{"secrets/azure-sas-token", "upload.py",
		func(g *fakeGen) (string, string) {
			sig := strings.NewReplacer("+", "%2B", "/", "%2F").Replace(g.str(b64, 43)) + "%3D"
			return "url = \"https://mldata.blob.core.windows.net/ckpt/model.bin?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-01-01T00:00:00Z&spr=https&sig=" + sig + "\"\n", sig
		},
		func(g *fakeGen) string {
			return "url = \"https://cdn.example.com/img.png?w=200&sig=" + g.str(alnum, 16) + "\"\nsas = os.environ[\"AZURE_SAS\"]\n"
		}},
	{"secrets/azure-container-registry", "push.sh",
		func(g *fakeGen) (string, string) {
			t := g.str(b64, 42) + "+ACR" + g.str(alnum, 6)
			return "docker login mlregistry.azurecr.io -u mlregistry -p " + t + "\n", t
		},
		func(g *fakeGen) string {
			return "echo $ACR_PASSWORD | docker login mlregistry.azurecr.io -u mlregistry --password-stdin\n"
		}},
	{"secrets/azure-container-registry", "login.sh",
		func(g *fakeGen) (string, string) {
			t := g.str(alnum, 32)
			return "docker login mlregistry.azurecr.io --username mlregistry --password " + t + "\n", t
		},
		func(g *fakeGen) string {
			return "docker login mlregistry.azurecr.io --username mlregistry --password \"$ACR_PASSWORD\"\n"
		}},
	{"secrets/openai-client-secret", "session.json",
		func(g *fakeGen) (string, string) {
			t := "ek_" + g.hex(32)
			return `{"client_secret": {"value": "` + t + `", "expires_at": 1756310470}}`, t
		},
		func(g *fakeGen) string { return `{"checksum": "check_` + g.hex(32) + `"}` }},
	{"secrets/maven-settings-password", "ci/settings.xml",
		func(g *fakeGen) (string, string) {
			t := g.str(alnum, 16)
			return "<settings>\n  <servers>\n    <server>\n      <id>internal</id>\n      <username>deploy</username>\n      <password>" + t + "</password>\n    </server>\n  </servers>\n</settings>\n", t
		},
		func(g *fakeGen) string {
			return "<settings><servers><server><id>a</id><password>${env.MAVEN_PASSWORD}</password></server>\n<server><id>b</id><password>{" + g.str(b64, 44) + "}</password></server></servers></settings>\n"
		}},
	{"secrets/private-packagist-token", "composer.sh",
		func(g *fakeGen) (string, string) {
			t := "packagist_ort_" + g.hex(68)
			return "composer config --global --auth http-basic.repo.packagist.com token " + t + "\n", t
		},
		func(g *fakeGen) string {
			return "composer config --global --auth http-basic.repo.packagist.com token packagist_ort_xxxx\n"
		}},
	{"secrets/sidekiq-sensitive-url", "Gemfile",
		func(g *fakeGen) (string, string) {
			t := g.hex(8) + ":" + g.hex(8)
			return "source \"https://rubygems.org\"\nsource https://" + t + "@gems.contribsys.com\ngem \"sidekiq-pro\"\n", t
		},
		func(g *fakeGen) string {
			return "source \"https://gems.contribsys.com/\" do\n  gem \"sidekiq-pro\"\nend\n"
		}},
}

// TestRules checks every ML-platform rule with a positive and a negative
// case, on several seeds.
func TestRules(t *testing.T) {
	s := newScanner(t)
	for i, tc := range ruleCases {
		t.Run(strings.TrimPrefix(tc.rule, "secrets/")+"/"+tc.path, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				g := newFake(uint64(i)*100 + seed)
				content, secret := tc.pos(g)
				fs := scan(t, s, tc.path, content)
				var got *scanners.Finding
				for j := range fs {
					if fs[j].RuleID == tc.rule {
						got = &fs[j]
					}
				}
				if got == nil {
					t.Fatalf("seed %d: %s not found; findings: %v", seed, tc.rule, ids(fs))
				}
				if got.Secret != secret {
					t.Errorf("seed %d: secret = %q, want %q", seed, scanners.Redact(got.Secret), scanners.Redact(secret))
				}
				if got.Line < 1 {
					t.Errorf("seed %d: line = %d", seed, got.Line)
				}
				if strings.Contains(got.Message, secret) || strings.Contains(got.Evidence, secret) {
					t.Errorf("seed %d: secret leaked into message or evidence", seed)
				}
				for _, f := range fs {
					if f.RuleID != tc.rule {
						t.Errorf("seed %d: extra finding %s", seed, f.RuleID)
					}
				}
				if neg := scan(t, s, tc.path, tc.neg(g)); len(neg) != 0 {
					t.Errorf("seed %d: negative case reported %v", seed, ids(neg))
				}
			}
		})
	}
}

func ids(fs []scanners.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.RuleID+"@"+f.Path+":"+strconv.Itoa(f.Line))
	}
	return out
}

// TestRulesListed checks that Rules() describes every rule with an ID,
// severity, title, why and fix, and includes every ML rule tested above.
func TestRulesListed(t *testing.T) {
	s := newScanner(t)
	rs := s.Rules()
	seen := map[string]bool{}
	for _, r := range rs {
		if !strings.HasPrefix(r.ID, "secrets/") || r.Check != "secrets" || r.Title == "" || r.Why == "" || r.Fix == "" {
			t.Errorf("incomplete rule %+v", r)
		}
		if seen[r.ID] {
			t.Errorf("duplicate rule ID %s", r.ID)
		}
		seen[r.ID] = true
	}
	for _, tc := range ruleCases {
		if !seen[tc.rule] {
			t.Errorf("rule %s not listed", tc.rule)
		}
	}
	if len(rs) < 240 {
		t.Errorf("only %d rules listed", len(rs))
	}
}

// TestHuggingFaceTokensAnyFirstCharacter: the placeholder allowlist drops
// whole-token placeholders (hf_xxxx…, hf_0000…), never a real token that
// merely starts with x or 0 (a prefix match once dropped one token in 31;
// the sbatch E2E test caught it with a random token).
func TestHuggingFaceTokensAnyFirstCharacter(t *testing.T) {
	s := newScanner(t)
	g := newFake(31)
	for _, first := range []string{"x", "X", "0", "y", "test", "token"} {
		tok := "hf_" + first + g.str(alnum, 34-len(first))
		if fs := scan(t, s, "job.sbatch", "export HF_TOKEN="+tok+"\n"); len(fs) != 1 || fs[0].RuleID != "secrets/huggingface-token" {
			t.Errorf("token starting with %q: %v", first, fs)
		}
	}
	for _, ph := range []string{"hf_" + strings.Repeat("x", 34), "hf_" + strings.Repeat("0", 34)} {
		if fs := scan(t, s, "job.sbatch", "export HF_TOKEN="+ph+"\n"); len(fs) != 0 {
			t.Errorf("placeholder %s reported: %v", ph, fs)
		}
	}
}

// TestRuleOf: a finding's rule, described alone, is its entry in the rule
// list, with lazy rules and without.
func TestRuleOf(t *testing.T) {
	for _, s := range []*Scanner{newScanner(t), newScanner(t, WithLazyRules())} {
		byID := s.described().byID
		if len(byID) < 200 {
			t.Fatalf("%d rules described", len(byID))
		}
		for id, want := range byID {
			got := s.ruleOf(engine.Finding{RuleID: id, Description: "not the rule's"})
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: ruleOf %+v, rule list %+v", id, got, want)
			}
		}
	}
}

// TestRuleLookup: Rule(id) is Rules()'s rule with that ID, with lazy rules
// and without, and nothing for an ID the check does not have.
func TestRuleLookup(t *testing.T) {
	for _, s := range []*Scanner{newScanner(t), newScanner(t, WithLazyRules())} {
		list := s.Rules()
		for _, want := range list {
			if got, ok := s.Rule(want.ID); !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("Rule(%s) = %+v, %v; want %+v", want.ID, got, ok, want)
			}
		}
		for _, id := range []string{"secrets/no-such-rule", "pins/image-latest", "secrets/", "huggingface-access-token"} {
			if r, ok := s.Rule(id); ok {
				t.Errorf("Rule(%s) = %+v", id, r)
			}
		}
	}
}
