package cuda

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseToolkitVersion(t *testing.T) {
	for out, want := range map[string]string{
		// nvidia-ctk --version (cmd/nvidia-ctk/main.go, internal/info/version.go)
		"NVIDIA Container Toolkit CLI version 1.17.8\ncommit: 6f6b5c8a1b2c3d4e5f60718293a4b5c6d7e8f901\n": "1.17.8",
		"NVIDIA Container Toolkit CLI version 1.17.5~rc.1\n":                                              "1.17.5~rc.1",
		// nvidia-container-cli --version
		"cli-version: 1.16.1\nlib-version: 1.16.1\nbuild date: 2024-07-23T14:57+00:00\n": "1.16.1",
		"version: 1.3.3\nbuild date: 2021-02-05T13:29+00:00\n":                           "1.3.3",
		"NVIDIA Container Toolkit CLI version latest\n":                                  "",
		"something else\n": "",
		"cli-version: " + strings.Repeat("1.", 40) + "1\n": "",
	} {
		if got := ParseToolkitVersion([]byte(out)); got != want {
			t.Errorf("%q: %q, want %q", out, got, want)
		}
	}
}

func TestToolkitVersionFallback(t *testing.T) {
	ctx := context.Background()
	var asked []string
	run := func(answers map[string]string) func(context.Context, string, ...string) ([]byte, error) {
		return func(_ context.Context, name string, args ...string) ([]byte, error) {
			asked = append(asked, name+" "+strings.Join(args, " "))
			if out, ok := answers[name]; ok {
				return []byte(out), nil
			}
			return nil, errors.New("executable file not found in $PATH")
		}
	}
	if v := toolkitVersion(ctx, run(map[string]string{"nvidia-ctk": "NVIDIA Container Toolkit CLI version 1.17.8\n"})); v != "1.17.8" || len(asked) != 1 {
		t.Errorf("nvidia-ctk: %q after %v", v, asked)
	}
	asked = nil
	if v := toolkitVersion(ctx, run(map[string]string{"nvidia-container-cli": "cli-version: 1.16.1\nlib-version: 1.16.1\n"})); v != "1.16.1" || len(asked) != 2 {
		t.Errorf("nvidia-container-cli: %q after %v", v, asked)
	}
	if v := toolkitVersion(ctx, run(nil)); v != "" {
		t.Errorf("no toolkit: %q", v)
	}
}

func TestHostFileToolkitVersion(t *testing.T) {
	h, err := ParseHost([]byte("driver_version: 550.54.15\ncontainer_toolkit_version: 1.16.1\ngpus: []\n"))
	if err != nil || h.ContainerToolkitVersion != "1.16.1" {
		t.Fatalf("%+v %v", h, err)
	}
	y, err := h.YAML()
	if err != nil || !strings.Contains(string(y), "container_toolkit_version: 1.16.1") {
		t.Fatalf("YAML %s %v", y, err)
	}
	back, err := ParseHost(y)
	if err != nil || back.ContainerToolkitVersion != "1.16.1" {
		t.Fatalf("round trip %+v %v", back, err)
	}
	if _, err := ParseHost([]byte("driver_version: 550.54.15\ncontainer_toolkit_version: latest\n")); err == nil {
		t.Error("toolkit version 'latest' accepted")
	}
	// The inventory's inline hosts carry it too.
	pools, err := parseInventory([]byte("pools:\n  - name: a\n    host: {driver_version: 535.161.07, container_toolkit_version: 1.17.3}\n"), t.TempDir())
	if err != nil || pools[0].Host.ContainerToolkitVersion != "1.17.3" {
		t.Fatalf("inventory %+v %v", pools, err)
	}
}
