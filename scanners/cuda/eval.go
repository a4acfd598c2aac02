package cuda

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mlwarden/mlwarden/rules"
)

// Verdict is the answer to "will this run there?".
type Verdict string

// Verdicts.
const (
	Compatible              Verdict = "compatible"
	CompatibleForwardCompat Verdict = "compatible-via-forward-compat"
	Incompatible            Verdict = "incompatible"
	Unknown                 Verdict = "unknown"
)

// Problem is one reason with the rule it reports.
type Problem struct {
	Rule   string
	Reason string
}

// Evaluation is the verdict for one declaration on one host.
type Evaluation struct {
	Host         string
	DeclaredCUDA string
	Verdict      Verdict
	// Reasons explain the verdict, in the order the checks ran.
	Reasons []string
	// Problems are the reasons that are findings (rule set).
	Problems []Problem

	// reqBranch is the requirement alternative without a cuda factor that
	// held (NVIDIA's marker for a branch its compat package supports).
	reqBranch string
}

func (ev *Evaluation) note(format string, args ...any) {
	ev.Reasons = append(ev.Reasons, fmt.Sprintf(format, args...))
}

func (ev *Evaluation) problem(rule, format string, args ...any) {
	r := fmt.Sprintf(format, args...)
	ev.Reasons = append(ev.Reasons, r)
	ev.Problems = append(ev.Problems, Problem{Rule: rule, Reason: r})
}

func (ev *Evaluation) failed() bool {
	return slices.ContainsFunc(ev.Problems, func(p Problem) bool { return p.Rule != RuleForwardCompatRequired })
}

// hostCUDA returns the CUDA version the host driver supports: as given, else
// from the driver branch.
func hostCUDA(t *rules.CUDATable, h HostFacts) (string, bool) {
	if h.CUDADriverVersion != "" {
		if mm, ok := majorMinor(h.CUDADriverVersion); ok {
			return mm, true
		}
	}
	maj := majorOf(h.DriverVersion)
	v := ""
	for _, b := range t.Branches { // ascending
		if b.Branch <= maj {
			v = b.CUDA
		}
	}
	return v, false
}

// toolkitDriver returns the toolkit driver of the first release of cuda
// (major.minor) for the host's OS, and its source.
func toolkitDriver(t *rules.CUDATable, cuda, os string) (drv, src string) {
	for _, r := range t.Toolkits { // newest first: the last match is the GA
		if mm, _ := majorMinor(r.CUDA); mm != cuda {
			continue
		}
		d := r.Linux
		if os == "windows" {
			d = r.Windows
		}
		if d != "" {
			drv, src = d, r.Source
		}
	}
	return drv, src
}

func minorFloor(t *rules.CUDATable, major int, os string) (string, string) {
	for _, r := range t.MinorCompat {
		if r.Major == major {
			if os == "windows" {
				return r.Windows, r.Source
			}
			return r.Linux, r.Source
		}
	}
	return "", ""
}

// archRow returns the arch facts of cuda: the lowest target and every
// target known up to that release.
func archFacts(t *rules.CUDATable, cuda string) (minCC string, known []string, firstSeen map[string]string) {
	firstSeen = map[string]string{}
	for _, r := range t.Arch { // ascending
		for _, cc := range r.Added {
			if _, ok := firstSeen[cc]; !ok {
				firstSeen[cc] = r.CUDA
			}
		}
		if vcmp(r.CUDA, cuda) > 0 {
			continue
		}
		minCC = r.MinCC
		known = append(known, r.Added...)
		known = slices.DeleteFunc(known, func(cc string) bool { return slices.Contains(r.Dropped, cc) })
	}
	return minCC, known, firstSeen
}

func gpuName(i int, g GPU) string {
	if g.Name == "" {
		return "GPU " + strconv.Itoa(i)
	}
	return g.Name
}

func gpuLabel(i int, g GPU) string {
	return fmt.Sprintf("%s (%s, compute capability %s)", gpuName(i, g), g.Brand, g.ComputeCapability)
}

// Evaluate decides whether what d declares runs on host h: first the NVIDIA
// container toolkit's requirement check (images, legacy mode), then the GPU
// architectures, then forward compatibility, then minor-version
// compatibility.
func Evaluate(t *rules.CUDATable, d Declared, name string, h HostFacts) Evaluation {
	ev := Evaluation{Host: name, DeclaredCUDA: d.CUDA}
	if d.CUDA == "" && len(d.CompatDrivers) == 0 && (d.Env == nil || len(d.Env.Requirements) == 0 && d.Env.LegacyInvalid == "") {
		ev.Verdict = Unknown
		if len(d.Undeclared) > 0 {
			ev.note("CUDA is used without a version (%s): the version is chosen at install or load time", d.Undeclared[0].What)
		} else {
			ev.note("nothing declares a CUDA version")
		}
		return ev
	}
	hc, reported := hostCUDA(t, h)
	src := "driver branch"
	if reported {
		src = "driver"
	}
	drvMajor := majorOf(h.DriverVersion)
	linux := h.OS != "windows"
	legacy := h.ContainerToolkitMode != ModeCDI

	// 1. The container toolkit's requirement check (legacy mode).
	if d.Env != nil {
		switch {
		case !legacy:
			ev.note("container toolkit in CDI mode: NVIDIA_REQUIRE_* is not evaluated")
		case d.Env.Disabled:
			ev.note("NVIDIA_DISABLE_REQUIRE is true: the container toolkit skips the requirement check")
		default:
			evalRequirements(&ev, d, h, hc, d.CUDA)
		}
	}

	// 2. Compat libraries shipped in the image are injected when newer than
	// the host driver (default ldconfig mode), even with the requirement
	// check disabled; on a GPU that cannot use them cuInit fails with 804.
	usable := ""
	if linux && legacy {
		for _, c := range d.CompatDrivers {
			if majorOf(c) > drvMajor {
				if usable == "" || vcmp(c, usable) > 0 {
					usable = c
				}
			}
		}
	}
	if usable != "" {
		for i, g := range h.GPUs {
			ok, inferred := forwardCapable(t, i, g)
			if inferred != "" {
				ev.note("%s", inferred)
			}
			if !ok {
				ev.problem(RuleIncompatible, "the image's CUDA forward-compatibility library libcuda.so.%s is newer than driver %s and is used on %s, which is not a data-center GPU: cuInit fails with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804) (%s)",
					usable, h.DriverVersion, gpuLabel(i, g), t.Forward.Source)
			}
		}
	}

	declared := d.CUDA
	if declared == "" && usable != "" {
		declared = branchCUDA(t, majorOf(usable))
	}
	if declared == "" {
		switch {
		case ev.failed():
		case len(d.CompatDrivers) > 0:
			ev.note("the image's forward-compatibility libraries (libcuda.so.%s) are not newer than driver %s: the container toolkit does not use them", strings.Join(d.CompatDrivers, ", libcuda.so."), h.DriverVersion)
		default:
			ev.note("no CUDA version declared beyond the toolkit requirement")
		}
		return finish(ev, false)
	}
	ev.DeclaredCUDA = declared

	// 3. GPU architecture.
	evalArch(&ev, t, d, h, declared, hc)
	if slices.ContainsFunc(ev.Problems, func(p Problem) bool { return p.Rule == RuleIncompatible || p.Rule == RuleRequirementInvalid }) {
		return finish(ev, false) // the container does not start: the driver step is moot
	}

	// 4. Driver: native, forward compatibility, minor-version compatibility.
	if hc == "" {
		ev.problem(RuleIncompatible, "driver %s is older than any CUDA release in the table (CUDA 10.0 needs 410.48): CUDA %s cannot run", h.DriverVersion, declared)
		return finish(ev, false)
	}
	if vcmp(hc, declared) >= 0 {
		ev.note("driver %s supports CUDA %s (from the %s) >= %s", h.DriverVersion, hc, src, declared)
		return finish(ev, false)
	}
	// Minor-version compatibility first: a driver of the same major at or
	// above the floor runs it with no compat libraries, whatever a
	// requirement's branch alternative suggests.
	dm := majorOf(declared)
	floor, fsrc := minorFloor(t, dm, h.OS)
	if dm >= 11 && majorOf(hc) == dm && floor != "" && vcmp(h.DriverVersion, floor) >= 0 {
		ev.note("driver %s (CUDA %s) runs CUDA %s through minor-version compatibility (CUDA %d.x needs >= %s, %s): features newer than CUDA %s are unavailable and PTX built by CUDA %s cannot be JIT-compiled",
			h.DriverVersion, hc, declared, dm, floor, fsrc, hc, declared)
		return finish(ev, false)
	}
	if fc, ok := evalForward(&ev, t, d, h, declared, usable); ok {
		return finish(ev, fc)
	}
	need, nsrc := toolkitDriver(t, declared, h.OS)
	switch {
	case dm >= 11 && floor != "" && majorOf(hc) == dm:
		ev.problem(RuleIncompatible, "driver %s is below %s, the minimum for CUDA %d.x minor-version compatibility (%s); CUDA %s needs it or the toolkit driver %s",
			h.DriverVersion, floor, dm, fsrc, declared, orUnknown(need))
	case need != "" && dm >= 11 && floor != "":
		ev.problem(RuleIncompatible, "CUDA %s needs a CUDA %d.x driver: >= %s through minor-version compatibility (%s), or its toolkit driver >= %s (%s); driver %s supports only CUDA %s",
			declared, dm, floor, fsrc, need, nsrc, h.DriverVersion, hc)
	case need != "":
		ev.problem(RuleIncompatible, "CUDA %s needs driver >= %s (%s); driver %s supports only CUDA %s",
			declared, need, nsrc, h.DriverVersion, hc)
	case floor != "":
		ev.problem(RuleIncompatible, "CUDA %s needs a driver of the %d.x family (>= %s, %s); driver %s supports only CUDA %s",
			declared, dm, floor, fsrc, h.DriverVersion, hc)
	default:
		ev.problem(RuleIncompatible, "CUDA %s is newer than driver %s supports (CUDA %s)", declared, h.DriverVersion, hc)
	}
	return finish(ev, false)
}

func orUnknown(s string) string {
	if s == "" {
		return "(not in the table)"
	}
	return s
}

func finish(ev Evaluation, viaFC bool) Evaluation {
	switch {
	case ev.failed():
		ev.Verdict = Incompatible
	case viaFC:
		ev.Verdict = CompatibleForwardCompat
	default:
		ev.Verdict = Compatible
	}
	return ev
}

func branchCUDA(t *rules.CUDATable, major int) string {
	v := ""
	for _, b := range t.Branches {
		if b.Branch <= major {
			v = b.CUDA
		}
	}
	return v
}

// evalRequirements runs every NVIDIA_REQUIRE_* for every GPU.
func evalRequirements(ev *Evaluation, d Declared, h HostFacts, hc, declared string) {
	e := d.Env
	if e.LegacyInvalid != "" {
		ev.problem(RuleRequirementInvalid, "CUDA_VERSION=%q cannot be read as a version by the NVIDIA container toolkit (it wants X.Y[.Z] without leading zeros): the hook fails and the container does not start", e.LegacyInvalid)
	}
	props := []Props{{CUDA: hc, Driver: h.DriverVersion}}
	if len(h.GPUs) > 0 {
		props = props[:0]
		for _, g := range h.GPUs {
			props = append(props, Props{CUDA: hc, Driver: h.DriverVersion, Arch: g.ComputeCapability, Brand: g.Brand, HasDevice: true})
		}
	}
	for _, r := range e.Requirements {
		var bad []string
		viaBranch := ""
		invalid := false
		for i, p := range props {
			res := EvaluateRequirement(r.Expr, p)
			switch {
			case res.Invalid:
				invalid = true
			case !res.Satisfied:
				where := "the host"
				if p.HasDevice {
					where = gpuLabel(i, h.GPUs[i])
				}
				bad = append(bad, fmt.Sprintf("%s (%s)", where, strings.TrimPrefix(res.Message, "requirement error: ")))
			case res.Term > 0 && !strings.Contains(strings.ToLower(res.TermText), "cuda"):
				viaBranch = res.TermText
			}
			if invalid {
				break
			}
		}
		switch {
		case invalid:
			ev.problem(RuleRequirementInvalid, "%s=%q is an invalid expression for the NVIDIA container toolkit (requirement error: invalid expression): the container does not start", r.Var, r.Expr)
		case len(bad) > 0:
			ev.problem(RuleIncompatible, "%s=%q is not satisfied by driver %s (CUDA %s) on %s: the NVIDIA container toolkit refuses to start the container", r.Var, short(r.Expr), h.DriverVersion, hc, strings.Join(bad, "; "))
		case viaBranch != "":
			ev.reqBranch = viaBranch
			ev.note("%s holds through the alternative %q, NVIDIA's marker for a driver branch the image's forward-compatibility package supports", r.Var, viaBranch)
		default:
			ev.note("%s=%q holds on every GPU", r.Var, short(r.Expr))
		}
	}
}

func short(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// evalArch checks the GPUs against the declared CUDA's targets and the arch
// list.
func evalArch(ev *Evaluation, t *rules.CUDATable, d Declared, h HostFacts, declared, hc string) {
	if len(h.GPUs) == 0 {
		ev.note("no GPUs listed for the host: architectures not checked")
		return
	}
	minCC, known, firstSeen := archFacts(t, declared)
	for i, g := range h.GPUs {
		cc := g.ComputeCapability
		if minCC != "" && vcmp(cc, minCC) < 0 {
			ev.problem(RuleArchUnsupported, "%s is below compute capability %s, the oldest CUDA %s supports: no kernels can be built for it", gpuLabel(i, g), minCC, declared)
			continue
		}
		if d.Arch != nil && len(d.Arch.Targets) > 0 {
			runs, ptx := d.Arch.Runs(cc)
			switch {
			case !runs:
				ev.problem(RuleArchUnsupported, "TORCH_CUDA_ARCH_LIST=%q has no cubin or PTX for %s: 'no kernel image is available for execution on the device'", d.Arch.Raw, gpuLabel(i, g))
			case ptx && hc != "" && vcmp(hc, declared) < 0:
				ev.problem(RuleArchUnsupported, "%s runs TORCH_CUDA_ARCH_LIST=%q only by JIT-compiling PTX from CUDA %s, which driver %s (CUDA %s) cannot do", gpuLabel(i, g), d.Arch.Raw, declared, h.DriverVersion, hc)
			case ptx:
				ev.note("%s runs the build by JIT-compiling its PTX (slow first start)", gpuLabel(i, g))
			}
			continue
		}
		newest := ""
		for _, k := range known {
			if newest == "" || vcmp(k, newest) > 0 {
				newest = k
			}
		}
		if newest == "" || vcmp(cc, newest) <= 0 {
			continue
		}
		first := firstSeen[cc]
		if first == "" {
			first = "a later release"
		} else {
			first = "CUDA " + first
		}
		if d.NoPTX {
			ev.problem(RuleArchUnsupported, "%s is newer than CUDA %s can target (first supported by %s), and PyTorch's CUDA %s builds ship no PTX for it: 'no kernel image is available for execution on the device'", gpuLabel(i, g), declared, first, declared)
		} else {
			ev.note("%s is newer than CUDA %s can target (first supported by %s): it runs only if the build embeds PTX", gpuLabel(i, g), declared, first)
		}
	}
}

// evalForward decides whether forward compatibility makes declared run. ok
// is false when forward compatibility does not apply (fall through to
// minor-version compatibility).
func evalForward(ev *Evaluation, t *rules.CUDATable, d Declared, h HostFacts, declared, imageCompat string) (viaFC, ok bool) {
	fcCUDA, branches, where := "", []int(nil), ""
	switch {
	case imageCompat != "":
		fcCUDA = branchCUDA(t, majorOf(imageCompat))
		where = "the image's libcuda.so." + imageCompat
		for _, p := range t.Forward.Packages {
			if mm, _ := majorMinor(p.CUDA); mm == fcCUDA {
				branches = p.Branches
			}
		}
	case h.ForwardCompat != nil:
		fcCUDA, _ = majorMinor(h.ForwardCompat.CUDA)
		where = "the host's cuda-compat " + h.ForwardCompat.CUDA
		branches = h.ForwardCompat.SupportedBranches
	case ev.reqBranch != "" && linuxOS(h) && d.FromImage:
		// The alternative is only NVIDIA's marker that a compat package
		// would support this branch: the image's files were walked and
		// hold no libcuda.so under /usr/local/cuda*/compat.
		ev.problem(RuleIncompatible, "CUDA %s is newer than driver %s supports (CUDA %s); the image's requirement alternative %q marks a branch NVIDIA's forward-compatibility package supports, but the image ships no /usr/local/cuda*/compat/libcuda.so.*: install cuda-compat-%s in the image (or on the host, and add forward_compat to the host file), or use a driver >= %s",
			declared, h.DriverVersion, branchCUDA(t, majorOf(h.DriverVersion)), ev.reqBranch, strings.ReplaceAll(declared, ".", "-"), orUnknown(firstDriver(t, declared, h.OS)))
		return false, true
	case ev.reqBranch != "" && linuxOS(h):
		fcCUDA = declared
		where = "the image's cuda-compat package, inferred from its requirement alternative " + strconv.Quote(ev.reqBranch) + " alone (only the environment is known, not the image's files)"
		branches = []int{majorOf(h.DriverVersion)} // the requirement checked the branch
	default:
		return false, false
	}
	if fcCUDA == "" || vcmp(fcCUDA, declared) < 0 {
		ev.note("%s provides CUDA %s, older than the declared %s", where, orUnknown(fcCUDA), declared)
		return false, false
	}
	if h.OS == "windows" {
		ev.note("forward compatibility (%s) is Linux-only", where)
		return false, false
	}
	bad := false
	var inferred []string
	for i, g := range h.GPUs {
		ok, why := forwardCapable(t, i, g)
		if why != "" && imageCompat == "" { // the image case has noted it
			ev.note("%s", why)
		}
		if why != "" {
			inferred = append(inferred, gpuName(i, g))
		}
		if !ok {
			bad = true
			if imageCompat == "" { // the image case is reported already
				ev.problem(RuleIncompatible, "CUDA %s needs forward compatibility (%s) on driver %s, but %s is not a data-center GPU: cuInit fails with error 804 (%s)", declared, where, h.DriverVersion, gpuLabel(i, g), t.Forward.Source)
			}
		}
	}
	if bad {
		return false, true
	}
	branch := majorOf(h.DriverVersion)
	switch {
	case len(branches) == 0:
		ev.problem(RuleForwardCompatRequired, "CUDA %s runs on driver %s only through forward compatibility (%s); the driver branches it supports are not in the table: check that R%d is one (%s)", declared, h.DriverVersion, where, branch, t.Forward.Source)
	case !slices.Contains(branches, branch):
		ev.problem(RuleIncompatible, "CUDA %s would need forward compatibility (%s), which does not support driver branch R%d (supported: R%s)", declared, where, branch, joinInts(branches))
		return false, true
	default:
		ev.problem(RuleForwardCompatRequired, "CUDA %s runs on driver %s (CUDA %s) only through forward compatibility (%s, supports R%s): it needs the compat libraries on the loader path, data-center GPUs and a supported branch, or it fails with error 804", declared, h.DriverVersion, branchCUDA(t, branch), where, joinInts(branches))
	}
	if len(inferred) > 0 { // say so in the finding, not only in the reasons
		last := &ev.Problems[len(ev.Problems)-1]
		last.Reason += fmt.Sprintf(" (NVML reports the brand as unknown: %s inferred as data-center from name and compute capability)", strings.Join(inferred, ", "))
		ev.Reasons[len(ev.Reasons)-1] = last.Reason
	}
	if len(h.GPUs) == 0 {
		ev.note("no GPUs listed: forward compatibility assumes data-center GPUs")
	}
	return true, true
}

// firstDriver is the driver a CUDA release needs natively: its toolkit
// driver.
func firstDriver(t *rules.CUDATable, cuda, os string) string {
	d, _ := toolkitDriver(t, cuda, os)
	return d
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", R")
}

func linuxOS(h HostFacts) bool { return h.OS != "windows" }
