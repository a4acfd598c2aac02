package cuda

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mlwarden/mlwarden/rules"
)

// BrandUnknown is the brand NVML reports for a GPU it cannot place (NVML's
// BRAND_UNKNOWN, the toolkit's "unknown"), and the brand of a GPU given
// without one.
const BrandUnknown = "unknown"

// dataCenterCC are the compute capabilities that only data-center parts
// have: 8.0 (A100, A30, A800), 9.0 (H100, H200, H20, H800, GH200), 10.0
// (B200, GB200), 10.3 (B300, GB300). Consumer and workstation parts of the
// same generations are 8.6/8.9/12.0, and 7.0 is both V100 and TITAN V.
var dataCenterCC = []string{"8.0", "9.0", "10.0", "10.3"}

// dataCenterName matches one word of a data-center part's product name as
// NVML spells it ("NVIDIA GH200 480GB", "NVIDIA H100 80GB HBM3",
// "NVIDIA A100-SXM4-80GB", "NVIDIA L40S", "NVIDIA A10G", "Tesla V100-SXM2-16GB").
var dataCenterName = regexp.MustCompile(`^(?:tesla|g?h\d{2,3}|g?b\d{3}|a\d{1,3}g?|l\d{1,2}s?|v100s?|p100|p40|p4|t4|k\d{2})$`)

// consumerName matches one word that names a consumer or workstation line:
// such a part is never inferred to be data-center.
var consumerName = regexp.MustCompile(`^(?:geforce|titan|rtx|quadro|nvs)$`)

// forwardCapable reports whether g is a GPU that forward compatibility runs
// on: its brand is one of the table's data-center brands or, when NVML
// reports the brand as "unknown" (older libnvidia-container and NVML builds
// do for new data-center parts such as GH200), its name or, without a
// telling name, its compute capability is a data-center part's. inferred is
// set, as a sentence for the reasons, when the brand was inferred.
func forwardCapable(t *rules.CUDATable, i int, g GPU) (ok bool, inferred string) {
	if slices.Contains(t.Forward.Brands, g.Brand) {
		return true, ""
	}
	if g.Brand != BrandUnknown && g.Brand != "" {
		return false, ""
	}
	words := strings.FieldsFunc(strings.ToLower(g.Name), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	})
	if slices.ContainsFunc(words, consumerName.MatchString) {
		return false, ""
	}
	if j := slices.IndexFunc(words, dataCenterName.MatchString); j >= 0 {
		return true, fmt.Sprintf("NVML reports the brand of %s as unknown: brand inferred as data-center from its name (%q is a data-center part), so forward compatibility is judged as for a data-center GPU", gpuName(i, g), words[j])
	}
	if slices.Contains(dataCenterCC, g.ComputeCapability) {
		return true, fmt.Sprintf("NVML reports the brand of %s as unknown: brand inferred as data-center from compute capability %s, which only data-center parts have, so forward compatibility is judged as for a data-center GPU", gpuName(i, g), g.ComputeCapability)
	}
	return false, ""
}
