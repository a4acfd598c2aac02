package secrets

import "testing"

// BenchmarkNormalizeNew is the passes of issue 37 (joinLines, sdkContext)
// over the benchmarks' config-like text and source code, alone.
func BenchmarkNormalizeNew(b *testing.B) {
	for _, in := range []struct {
		name string
		text []byte
	}{{"config", benchText()}, {"code", []byte(codeFiller(newFake(3), 14000))}} {
		b.Run(in.name+"/joinLines", func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				joinLines(in.text)
			}
		})
		b.Run(in.name+"/sdkContext", func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				sdkContext(in.text)
			}
		})
		b.Run(in.name+"/normalize", func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				normalize(in.text)
			}
		})
	}
}
