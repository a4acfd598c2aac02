package cuda

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
)

// LocalHost reads this node's host facts: through NVML when the binary was
// built with cgo and libnvidia-ml loads, else from /proc/driver/nvidia/version
// and nvidia-smi. It fails when the node has no NVIDIA driver.
func LocalHost(ctx context.Context) (HostFacts, error) {
	h, nvErr := probeNVML()
	if nvErr != nil {
		var err error
		if h, err = probeProcSMI(ctx); err != nil {
			return HostFacts{}, fmt.Errorf("%v; %v", nvErr, err)
		}
	}
	if b, err := os.ReadFile(toolkitConfig); err == nil && ToolkitModeCDI(b) {
		h.ContainerToolkitMode = ModeCDI
	}
	h.ContainerToolkitVersion = toolkitVersion(ctx, runCommand)
	return h, nil
}

// runCommand runs a program of the host and returns its standard output.
func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).Output()
}

// toolkitVersion asks the NVIDIA Container Toolkit for its version:
// `nvidia-ctk --version`, else `nvidia-container-cli --version` (hosts
// with only libnvidia-container). "" when neither answers.
func toolkitVersion(ctx context.Context, run func(ctx context.Context, name string, args ...string) ([]byte, error)) string {
	if out, err := run(ctx, "nvidia-ctk", "--version"); err == nil {
		if v := ParseToolkitVersion(out); v != "" {
			return v
		}
	}
	if out, err := run(ctx, "nvidia-container-cli", "--version"); err == nil {
		return ParseToolkitVersion(out)
	}
	return ""
}

// "NVIDIA Container Toolkit CLI version 1.17.8" (nvidia-ctk), or
// "cli-version: 1.17.8" / "version: 1.17.8" (nvidia-container-cli).
var (
	ctkVersionRe     = lazyregexp.New(`(?m)^NVIDIA Container Toolkit CLI version\s+(\S+)`)
	cliVersionRe     = lazyregexp.New(`(?m)^(?:cli-version|version):\s*(\S+)`)
	toolkitVersionRe = lazyregexp.New(`^[0-9]+(\.[0-9]+)+([~.+-][0-9A-Za-z.~+-]*)?$`)
)

// ParseToolkitVersion reads the version from `nvidia-ctk --version` or
// `nvidia-container-cli --version`; "" when there is none.
func ParseToolkitVersion(out []byte) string {
	for _, re := range []*lazyregexp.Regexp{ctkVersionRe, cliVersionRe} {
		if m := re.FindSubmatch(out); m != nil && len(m[1]) <= 64 && toolkitVersionRe.Match(m[1]) {
			return string(m[1])
		}
	}
	return ""
}

// toolkitConfig is the NVIDIA container runtime's configuration.
const toolkitConfig = "/etc/nvidia-container-runtime/config.toml"

// ToolkitModeCDI reports whether an NVIDIA container runtime config.toml
// sets mode = "cdi" (then NVIDIA_REQUIRE_* is not evaluated). "auto" and
// "legacy" count as legacy.
func ToolkitModeCDI(configTOML []byte) bool {
	var c struct {
		Runtime struct {
			Mode string `toml:"mode"`
		} `toml:"nvidia-container-runtime"`
	}
	if _, err := toml.Decode(string(configTOML), &c); err != nil {
		return false
	}
	return strings.EqualFold(c.Runtime.Mode, ModeCDI)
}

const procVersion = "/proc/driver/nvidia/version"

func probeProcSMI(ctx context.Context) (HostFacts, error) {
	h := HostFacts{OS: runtime.GOOS}
	if h.OS != "windows" {
		h.OS = "linux"
	}
	if b, err := os.ReadFile(procVersion); err == nil {
		if v, err := ParseProcVersion(string(b)); err == nil {
			h.DriverVersion = v
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	smiErr := error(nil)
	if out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=driver_version,compute_cap,name,mig.mode.current", "--format=csv,noheader").Output(); err == nil {
		drv, gpus, err := ParseSMIQuery(out)
		if err == nil {
			h.GPUs = gpus
			if h.DriverVersion == "" {
				h.DriverVersion = drv
			}
		} else {
			smiErr = err
		}
	} else {
		smiErr = fmt.Errorf("nvidia-smi: %w", err)
	}
	if out, err := exec.CommandContext(ctx, "nvidia-smi").Output(); err == nil {
		h.CUDADriverVersion = ParseSMIBanner(out)
	}
	if h.DriverVersion == "" {
		if smiErr == nil {
			smiErr = errors.New("nvidia-smi printed no driver version")
		}
		return HostFacts{}, fmt.Errorf("no NVIDIA driver found (%s unreadable; %v)", procVersion, smiErr)
	}
	if err := h.Normalize(); err != nil {
		return HostFacts{}, err
	}
	return h, nil
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  Thu ..." and
// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.195.03  Release Build ..."
var procVersionRe = lazyregexp.New(`Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)`)

// ParseProcVersion reads the driver version from /proc/driver/nvidia/version.
func ParseProcVersion(s string) (string, error) {
	m := procVersionRe.FindStringSubmatch(s)
	if m == nil {
		return "", fmt.Errorf("%s: no driver version found", procVersion)
	}
	return m[1], nil
}

var smiCUDARe = lazyregexp.New(`CUDA Version:\s*(\d+\.\d+)`)

// ParseSMIBanner reads "CUDA Version: 12.4" from nvidia-smi's banner.
func ParseSMIBanner(out []byte) string {
	if m := smiCUDARe.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// ParseSMIQuery reads `nvidia-smi --query-gpu=driver_version,compute_cap,
// name,mig.mode.current --format=csv,noheader`.
func ParseSMIQuery(out []byte) (driver string, gpus []GPU, err error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return "", nil, fmt.Errorf("nvidia-smi output: %w", err)
	}
	for _, rec := range recs {
		if len(rec) < 3 {
			continue
		}
		driver = strings.TrimSpace(rec[0])
		g := GPU{ComputeCapability: strings.TrimSpace(rec[1]), Name: strings.TrimSpace(rec[2])}
		g.Brand = brandFromName(g.Name)
		if len(rec) > 3 {
			g.MIG = strings.EqualFold(strings.TrimSpace(rec[3]), "Enabled")
		}
		gpus = append(gpus, g)
	}
	if driver == "" {
		return "", nil, errors.New("nvidia-smi output: no GPUs")
	}
	return driver, gpus, nil
}

// brandFromName guesses the NVML brand from a product name (nvidia-smi has
// no brand field).
func brandFromName(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "geforce") && strings.Contains(n, "rtx"):
		return "geforcertx"
	case strings.Contains(n, "geforce"):
		return "geforce"
	case strings.Contains(n, "titan") && strings.Contains(n, "rtx"):
		return "titanrtx"
	case strings.Contains(n, "titan"):
		return "titan"
	case strings.Contains(n, "quadro") && strings.Contains(n, "rtx"):
		return "quadrortx"
	case strings.Contains(n, "quadro"):
		return "quadro"
	case strings.Contains(n, "tesla"):
		return "tesla"
	case strings.Contains(n, "rtx"):
		return "nvidiartx"
	case strings.HasPrefix(n, "nvidia"):
		return "nvidia"
	}
	return "unknown"
}
