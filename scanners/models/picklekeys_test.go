package models

import (
	"archive/zip"
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mlwarden/mlwarden/internal/hostile"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets"
)

// fakeAlnum is n random alphanumerics from seed: a fake credential made at
// test time.
func fakeAlnum(seed uint64, n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

// TestPickleKeysReachSecrets: a credential whose rule needs a name beside
// it (a W&B key is 40 hex, a Cohere key 40 alphanumerics) is found when the
// pickle's dict keys name it, in the shapes checkpoints pickle their
// arguments (issue 37, item 1); ordinary arguments stay quiet.
func TestPickleKeysReachSecrets(t *testing.T) {
	type D = hostile.PDict
	wb, co, mi := fakeKey(37), fakeAlnum(37, 40), fakeAlnum(38, 32)
	args := D{"tokenizer_name", "meta-llama/Llama-2-7b-hf", "pad_token", "<|endoftext|>", "output_dir", "/scratch/run-0042/checkpoints", "token_type", "bert-base-uncased", "auth_method", "oauth-device-flow", "key_padding", "left_right_padding", "lr", 3}
	ckpt := func(v any, recon bool) []byte {
		var zbuf bytes.Buffer
		zw := zip.NewWriter(&zbuf)
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: "archive/data.pkl", Method: zip.Store})
		w.Write(hostile.Pickle(v, recon))
		zw.Close()
		return zbuf.Bytes()
	}
	cases := []struct {
		name, path string
		data       []byte
		rule       string // "" for no finding
		secret     string
	}{
		{"nested dict", "args.pkl", hostile.Pickle(D{"wandb", D{"project", "llm-pretrain", "api_key", wb}}, false), "secrets/wandb-api-key-legacy", wb},
		{"one-item dicts", "args.pkl", hostile.Pickle(D{"logging", D{"wandb", D{"key", wb}}}, false), "secrets/wandb-api-key-legacy", wb},
		{"namespace in a checkpoint", "ckpt.pt", ckpt(D{"model", hostile.POrdered{"w", 1}, "args", hostile.PNamespace(append(args, "cohere_api_key", co))}, false), "secrets/cohere-api-key", co},
		{"namespace, _reconstructor", "ckpt.pt", ckpt(D{"args", hostile.PNamespace(append(args, "mistral_key", mi))}, true), "secrets/mistral-api-key", mi},
		{"omegaconf", "last.ckpt", ckpt(D{"hyper_parameters", hostile.POmega{"seed", 1, "logger", hostile.POmega{"wandb", hostile.POmega{"api_key", wb}}}}, false), "secrets/wandb-api-key-legacy", wb},
		{"lightning hparams", "last.ckpt", ckpt(D{"hparams", hostile.POrdered(append(args, "cohere", D{"api_key", co}))}, false), "secrets/cohere-api-key", co},
		{"ordinary arguments", "ckpt.pt", ckpt(D{"args", hostile.PNamespace(args)}, false), "", ""},
		{"digests under their names", "args.pkl", hostile.Pickle(D{"git", D{"commit", wb}, "tokenizer", D{"vocab_sha256", wb + wb[:24]}}, false), "", ""},
	}
	sec, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	// The models check, and its strings-only reading (--checks secrets).
	for _, c := range cases {
		for mode, s := range map[string]scanners.Scanner{"models": New(WithStrings(sec.ScanBytes)), "strings only": StringsOnly(sec.ScanBytes)} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				fs, err := scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Kind: scanners.ArtifactFile, Path: c.path}, c.data)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, f := range fs {
					if strings.HasPrefix(f.RuleID, "secrets/") {
						got = append(got, f.RuleID)
						if c.rule == "" || f.RuleID == c.rule && f.Secret != c.secret {
							t.Errorf("finding %s %q: %s", f.RuleID, f.Secret, f.Message)
						}
					}
				}
				if c.rule != "" && (len(got) != 1 || got[0] != c.rule) {
					t.Errorf("secrets findings %v, want [%s]", got, c.rule)
				}
			})
		}
	}
}
