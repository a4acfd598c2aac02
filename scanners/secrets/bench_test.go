package secrets

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"

	"github.com/mlwarden/mlwarden/rules"
	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/secrets/internal/engine"
)

// TestConstructionCost logs where construction time goes (run with -v).
func TestConstructionCost(t *testing.T) {
	t0 := time.Now()
	v := viper.New()
	v.SetConfigType("toml")
	v.ReadConfig(strings.NewReader(config.DefaultConfig))
	t1 := time.Now()
	var vc config.ViperConfig
	v.Unmarshal(&vc)
	t2 := time.Now()
	cfg, _ := vc.Translate()
	t3 := time.Now()
	translate(vc)
	t.Logf("parallel translate %v", time.Since(t3))
	t3 = time.Now()
	d := engine.NewDetector(cfg)
	t4 := time.Now()
	meta, _ := rules.LoadSecrets(rules.SecretsFS())
	ours, _, _ := parseConfig(meta.TOML)
	t5 := time.Now()
	_ = extend(ours, cfg, nil)
	t6 := time.Now()
	t.Logf("default: read %v unmarshal %v translate %v detector %v; ours %v; merge %v", t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), t5.Sub(t4), t6.Sub(t5))
	_ = d
}

func BenchmarkScanSbatch(b *testing.B) {
	s := newScanner(b)
	data := []byte("#!/bin/bash\n#SBATCH -N 4\n#SBATCH --gres=gpu:8\nexport HF_HOME=/scratch/hf\nsrun python train.py --lr 1e-4\n")
	for b.Loop() {
		scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Path: "job.sbatch"}, data)
	}
}

// benchText is 1 MB of config- and script-like filler with one token.
func benchText() []byte {
	g := newFake(77)
	var b strings.Builder
	lines := []string{"lr: 0.%d", "batch_size: %d", "    loss = model(x[%d]).sum()", "srun python train.py --epochs %d", "name: run-%d", "export OMP_NUM_THREADS=%d"}
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, lines[i%len(lines)]+"\n", g.r.IntN(5000))
	}
	b.WriteString("export HF_TOKEN=hf_" + g.str(alnum, 34) + "\n")
	return []byte(b.String())
}

// BenchmarkEngineGitleaks is gitleaks' detector as its CLI sets it up (default
// config, decode depth 5) on 1 MB of text.
func BenchmarkEngineGitleaks(b *testing.B) {
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		b.Fatal(err)
	}
	d.MaxDecodeDepth = 5
	text := string(benchText())
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		//lint:ignore SA1019 the same entry point the check uses.
		d.DetectContext(context.Background(), detect.Fragment{Raw: text, FilePath: "a.yaml", StartLine: 1})
	}
}

// BenchmarkEngineMlwarden is the secrets check on the same text.
func BenchmarkEngineMlwarden(b *testing.B) {
	s := newScanner(b)
	text := benchText()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		scanners.ScanBytes(context.Background(), s, &scanners.Artifact{Path: "a.yaml"}, text)
	}
}
