package pins

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/mlwarden/mlwarden/internal/lazyregexp"
	"github.com/mlwarden/mlwarden/scanners"
)

// This file holds the package managers a script runs besides pip's own
// install: pipx, uv tool, conda environment files, npm/yarn/pnpm/npx, Go,
// the OS package managers, Chocolatey and NuGet, and the requirement files
// pip installs from.

// isPip reports pip, pip2, pip3 and their versioned names (pip3.11).
func isPip(p string) bool {
	switch {
	case p == "pip" || p == "pip2" || p == "pip3":
		return true
	case strings.HasPrefix(p, "pip2.") || strings.HasPrefix(p, "pip3."):
		return strings.Trim(p[5:], "0123456789") == ""
	}
	return false
}

// pipx checks pipx install/run/inject PKG.
func (sc *shellScan) pipx(args []arg, ln int) {
	if len(args) == 0 {
		return
	}
	sub := args[0].s
	rest := args[1:]
	switch sub {
	case "install", "run", "inject", "upgrade":
	default:
		return
	}
	if sub == "inject" && len(rest) > 0 {
		rest = rest[1:] // the venv
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		name, _, hasVal := strings.Cut(a.s, "=")
		switch {
		case name == "--spec" || name == "--pip-args" || name == "--python" || name == "--index-url" || name == "-i" ||
			name == "--suffix" || name == "--preinstall" || name == "--backend" || name == "--path":
			if !hasVal {
				i++
			}
			if name == "--spec" && hasVal {
				sc.judgeTool("pipx "+sub, strings.TrimPrefix(a.s, "--spec="), ln)
			} else if name == "--spec" && i < len(rest) {
				sc.judgeTool("pipx "+sub, rest[i].s, ln)
			}
		case strings.HasPrefix(a.s, "-"):
		case a.dyn:
		default:
			sc.judgeTool("pipx "+sub, a.s, ln)
			if sub == "run" {
				return // the rest are the tool's arguments
			}
		}
	}
}

// judgeTool reports a Python tool installed or run by name without an
// exact version (pipx, uv tool, uvx), which accept pkg==x.y.z and, for
// uvx, pkg@x.y.z.
func (sc *shellScan) judgeTool(what, spec string, ln int) {
	if name, ver, ok := strings.Cut(spec, "@"); ok && !strings.Contains(spec, "://") && !strings.Contains(spec, " ") {
		if isExactVersion(ver) {
			return
		}
		if ver == "latest" {
			sc.r.add(rulePipUnpinned, ln, spec, fmt.Sprintf("%s %s takes the newest release each time; pin it: %s==<version>", what, spec, name))
			return
		}
		spec = name + "==" + ver
	}
	v, name, ref := judgeReq(spec)
	switch v {
	case reqVCSUnpinned:
		sc.r.add(ruleVCSUnpinned, ln, spec, vcsMessage(spec, ref))
	case reqUnpinned:
		sc.r.add(rulePipUnpinned, ln, spec, fmt.Sprintf("%s %q has no exact version, so each run gets whatever the index serves today (a new, yanked or hijacked release); pin it: %s==<version>", what, spec, name))
	}
}

func isExactVersion(v string) bool {
	if v == "" || v[0] < '0' || v[0] > '9' {
		return false
	}
	return !strings.ContainsAny(v, "*<>~^ ,")
}

// uv checks uv pip install/sync and uv tool install/run.
func (sc *shellScan) uv(args []arg, ln int) {
	args = skipOpts(args, "p", "q", "v")
	if len(args) < 2 {
		return
	}
	switch {
	case args[0].s == "pip" && args[1].s == "install":
		sc.pipInstall(args[2:], ln, true)
	case args[0].s == "pip" && args[1].s == "sync":
		for _, a := range args[2:] {
			if !strings.HasPrefix(a.s, "-") && !a.dyn {
				sc.requirementFile("uv pip sync", a.s, ln, false)
			}
		}
	case args[0].s == "tool" && (args[1].s == "install" || args[1].s == "run" || args[1].s == "upgrade"):
		sc.uvTool("uv tool "+args[1].s, args[2:], ln)
	}
}

var uvToolValueOpts = map[string]bool{
	"--from": true, "--with": true, "--python": true, "-p": true, "--index": true, "--index-url": true,
	"--extra-index-url": true, "-w": true, "--with-requirements": true, "--with-editable": true, "--constraints": true,
	"-c": true, "--overrides": true, "--env-file": true, "--directory": true, "--project": true, "--python-platform": true,
	"--default-index": true, "--find-links": true, "-f": true, "--index-strategy": true, "--resolution": true,
	"--prerelease": true, "--exclude-newer": true, "--link-mode": true, "--reinstall-package": true, "--upgrade-package": true,
}

// uvTool checks uv tool install/run PKG and uvx PKG (--from SPEC, --with
// SPEC): the first operand is the tool, what follows is its arguments.
func (sc *shellScan) uvTool(what string, args []arg, ln int) {
	from := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a.s, "=")
		switch {
		case uvToolValueOpts[name]:
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			switch name {
			case "--from", "--with":
				from = from || name == "--from"
				if !args[i].dyn {
					sc.judgeTool(what, val, ln)
				}
			case "--extra-index-url", "--index":
				sc.r.add(ruleExtraIndex, ln, val, fmt.Sprintf("%s %s %s adds a second package index: uv may take a same-named package from it (dependency confusion, as in the 2022 torchtriton incident); use one index that proxies the public one", what, name, val))
			}
		case strings.HasPrefix(a.s, "-"):
		default:
			if !from && !a.dyn {
				sc.judgeTool(what, a.s, ln)
			}
			return
		}
	}
}

// conda checks conda/mamba/micromamba install and create, and
// env create/update -f FILE.
func (sc *shellScan) conda(p string, args []arg, ln int) {
	if len(args) == 0 {
		return
	}
	sub := args[0].s
	rest := args[1:]
	if sub == "env" && len(rest) > 0 {
		sub, rest = "env "+rest[0].s, rest[1:]
	}
	switch sub {
	case "install", "create", "update", "env create", "env update":
	default:
		return
	}
	for i := 0; i < len(rest); i++ {
		name, val, hasVal := strings.Cut(rest[i].s, "=")
		if name == "-f" || name == "--file" {
			if !hasVal && i+1 < len(rest) {
				i++
				val = rest[i].s
			}
			if !rest[i].dyn {
				sc.requirementFile(p+" "+sub, val, ln, true)
			}
		}
	}
	if sub == "install" || sub == "create" {
		sc.condaInstall(rest, ln)
	}
}

// requirementFile judges a file that pip (-r, -c), uv pip sync or conda
// (-f) installs from: when the target holds it, it is judged there (as its
// own artifact when it has a requirements or environment name, else here);
// when it does not, nothing checked its pins, which is reported.
func (sc *shellScan) requirementFile(what, file string, ln int, conda bool) {
	if file == "" || file == "-" || strings.Contains(file, "://") {
		return
	}
	a := sc.r.s.a
	if a.Kind == "" || a.TargetKind == scanners.KindImage || a.Kind == scanners.ArtifactImageConfig {
		// Inside an image, the file is in a layer and checked there.
		return
	}
	if w := sc.st.written[sc.resolve(file)]; w != nil {
		// The script wrote it (cat > f <<EOF): that is what is installed.
		sc.judgeWritten(file, w, conda)
		return
	}
	if p, ok := sc.findInTarget(file); ok {
		own := kindRequirements
		if conda {
			own = kindConda
		}
		if a.TargetKind != scanners.KindFile && classify(&scanners.Artifact{Kind: scanners.ArtifactFile, Path: p}, nil) == own {
			return // checked as its own artifact, as what it is
		}
		data, err := fs.ReadFile(a.FS, p)
		if err != nil || len(data) > maxInput {
			return
		}
		inc := *a
		inc.Path = p
		child := &sink{a: &inc, seen: map[string]bool{}}
		if conda {
			scanConda(data, child.whole())
		} else {
			(&Scanner{}).requirements(sc.st.ctx, &inc, data, child.whole(), a.FS, path.Dir(p), map[string]bool{p: true}, 1)
		}
		sc.r.s.list = append(sc.r.s.list, child.list...)
		return
	}
	where := "is not in what was scanned"
	if a.FS == nil {
		where = "could not be looked up (the scan has no files beside this script)"
	}
	fix := "commit it beside the script, pinned with hashes (pip-compile --generate-hashes or uv pip compile --generate-hashes), and install with pip install --require-hashes -r " + file
	if conda {
		fix = "commit it beside the script with exact name=version=build pins, or install from a conda-lock file (conda-lock install, micromamba create -f conda-lock.yml)"
	}
	sc.r.add(ruleRequirementsUnseen, ln, file, fmt.Sprintf("%s installs from %s, which %s, so nothing checked what it pins: whatever versions and files it names at run time get installed; %s", what, file, where, fix))
}

// findInTarget looks for a file named by a script in the target: relative
// to the script's directory, to the directory the script cd'ed to, and to
// the target's root.
func (sc *shellScan) findInTarget(file string) (string, bool) {
	a := sc.r.s.a
	if a.FS == nil || strings.Contains(file, "$") {
		return "", false
	}
	dir := path.Dir(a.Path)
	var cands []string
	if strings.HasPrefix(file, "/") {
		cands = append(cands, strings.TrimPrefix(path.Clean(file), "/"))
	} else {
		if cwd := sc.st.cwd; cwd != "" && !strings.HasPrefix(cwd, "/") && !strings.HasPrefix(cwd, "\x00") {
			cands = append(cands, path.Join(dir, cwd, file), path.Join(cwd, file))
		}
		cands = append(cands, path.Join(dir, file), path.Clean(file))
	}
	for _, c := range cands {
		if !fs.ValidPath(c) {
			continue
		}
		if fi, err := fs.Stat(a.FS, c); err == nil && fi.Mode().IsRegular() {
			return c, true
		}
	}
	// An absolute path in a job (/workspace/requirements.txt) names where
	// the repository is checked out: try its base name at the root.
	if strings.HasPrefix(file, "/") {
		if b := path.Base(file); fs.ValidPath(b) {
			if fi, err := fs.Stat(a.FS, b); err == nil && fi.Mode().IsRegular() {
				return b, true
			}
		}
	}
	return "", false
}

// npmInstall checks npm install/i/add PKG, npm install -g, yarn add and
// yarn global add, pnpm add, bun add and npx/bunx PKG; and npm install /
// yarn install without the lock file enforced.
func (sc *shellScan) npmInstall(p string, args []arg, ln int) {
	if p == "npx" || p == "bunx" || p == "pnpm" && len(args) > 0 && args[0].s == "dlx" || p == "yarn" && len(args) > 0 && args[0].s == "dlx" {
		if p == "pnpm" || p == "yarn" {
			args = args[1:]
		}
		sc.npx(p, args, ln)
		return
	}
	if len(args) == 0 {
		if p == "yarn" {
			sc.r.add(ruleNPMNotCI, ln, "yarn", "yarn with no arguments installs from package.json and may rewrite yarn.lock; install exactly the lock file: yarn install --frozen-lockfile (yarn 2+: --immutable)")
		}
		return
	}
	global := false
	sub := args[0].s
	switch {
	case p == "yarn" && len(args) > 1 && sub == "global" && args[1].s == "add":
		global, args = true, args[2:]
	case p == "npm" && (sub == "exec" || sub == "x"):
		sc.npx(p+" "+sub, args[1:], ln)
		return
	case sub == "install" || sub == "i" || sub == "add" || sub == "in" || sub == "isntall" || sub == "install-test" || sub == "it":
		args = args[1:]
	default:
		return
	}
	var specs []arg
	frozen := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.s == "-g" || a.s == "--global" || a.s == "--location=global":
			global = true
		case a.s == "--frozen-lockfile" || a.s == "--immutable" || a.s == "--pure-lockfile" || a.s == "--ci":
			frozen = true
		case npmValueOpts[a.s]:
			i++ // --loglevel verbose, --registry URL
		case strings.HasPrefix(a.s, "-"):
		default:
			specs = append(specs, a)
		}
	}
	if len(specs) == 0 {
		switch {
		case global && p == "npm":
			sc.r.add(ruleNPMNotCI, ln, "npm "+sub+" -g", "npm "+sub+" -g installs the current package globally, and global installs ignore package-lock.json, so its dependencies resolve anew; install the project with npm ci, or a released package at an exact version: npm install -g pkg@<x.y.z>")
		case !frozen && (p == "npm" || p == "yarn" && sub == "install"):
			sc.r.add(ruleNPMNotCI, ln, p+" "+sub, fmt.Sprintf("%s %s resolves package.json anew and may rewrite the lock file, so this build need not install what was reviewed; install exactly the lock file: %s", p, sub, map[string]string{"npm": "npm ci", "yarn": "yarn install --frozen-lockfile (yarn 2+: --immutable)"}[p]))
		}
		return
	}
	rule := ruleNPMPackageUnpinned
	if global {
		rule = ruleNPMUnpinned
	}
	for _, a := range specs {
		if a.dyn || npmLocal(a.s) {
			continue
		}
		name, ver, pinned := npmSpec(a.s)
		if pinned {
			continue
		}
		how := "adds"
		if global {
			how = "installs globally"
		}
		what := fmt.Sprintf("%s %s %q without an exact version, so it gets whatever release matches today", p, how, a.s)
		if global {
			what += ", and it runs with your privileges"
		}
		if ver != "" && strings.HasPrefix(ver, "git") {
			sc.r.add(rule, ln, a.s, fmt.Sprintf("%s installs %q from a git ref that can move; pin the commit: %s#<40-hex commit>", p, a.s, strings.SplitN(a.s, "#", 2)[0]))
			continue
		}
		sc.r.add(rule, ln, a.s, fmt.Sprintf("%s; pin it: %s@<x.y.z>", what, name))
	}
}

// npmValueOpts are npm/yarn/pnpm options that take the next word.
var npmValueOpts = map[string]bool{
	"--loglevel": true, "--registry": true, "--prefix": true, "--cache": true, "--tag": true, "--userconfig": true,
	"--workspace": true, "-w": true, "--omit": true, "--include": true, "--install-strategy": true, "--location": true,
	"--filter": true, "--dir": true, "-C": true, "--cwd": true, "--modules-folder": true, "--network-timeout": true,
}

// npx checks npx/bunx/npm exec PKG: the package runs at once.
func (sc *shellScan) npx(p string, args []arg, ln int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a.s, "=")
		switch {
		case name == "-p" || name == "--package":
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			sc.npxSpec(p, val, ln, args[i].dyn)
			return
		case a.s == "--":
		case strings.HasPrefix(a.s, "-"):
			if name == "--cache" || name == "--userconfig" || name == "-c" || name == "--call" {
				if !hasVal {
					i++
				}
			}
		default:
			sc.npxSpec(p, a.s, ln, a.dyn)
			return
		}
	}
}

func (sc *shellScan) npxSpec(p, spec string, ln int, dyn bool) {
	if dyn || npmLocal(spec) {
		return
	}
	name, _, pinned := npmSpec(spec)
	if pinned {
		return
	}
	sc.r.add(ruleNPMPackageUnpinned, ln, spec, fmt.Sprintf("%s %s downloads and runs the newest release of %s at once; pin it: %s %s@<x.y.z>", p, spec, name, p, name))
}

// npmLocal reports a package spec that names a local path or tarball.
func npmLocal(s string) bool {
	return s == "." || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.HasPrefix(s, "/") ||
		strings.HasPrefix(s, "file:") || strings.HasSuffix(s, ".tgz") || strings.HasSuffix(s, ".tar") ||
		strings.HasSuffix(s, ".tar.gz") || strings.HasPrefix(s, "~")
}

// npmSpec splits an npm package spec into name and version and says
// whether it is pinned: an exact x.y.z, or a git URL at a full commit.
func npmSpec(s string) (name, ver string, pinned bool) {
	for _, pre := range []string{"github:", "gitlab:", "bitbucket:", "git+", "git://"} {
		if strings.HasPrefix(s, pre) {
			_, ref, _ := strings.Cut(s, "#")
			return s, "git", isCommit(ref)
		}
	}
	if strings.Contains(s, "://") {
		return s, "", true // a tarball URL
	}
	name = s
	if i := strings.LastIndex(s, "@"); i > 0 {
		name, ver = s[:i], s[i+1:]
	}
	if strings.HasPrefix(ver, "npm:") {
		return npmSpec(strings.TrimPrefix(ver, "npm:"))
	}
	return name, ver, isExactSemver(ver)
}

// goValueOpts are go build flags that take the next word as value.
var goValueOpts = map[string]bool{
	"-tags": true, "-ldflags": true, "-gcflags": true, "-asmflags": true, "-o": true, "-p": true, "-C": true,
	"-mod": true, "-modfile": true, "-pkgdir": true, "-toolexec": true, "-overlay": true, "-buildmode": true,
	"-installsuffix": true, "-compiler": true, "-gccgoflags": true, "-covermode": true, "-coverpkg": true, "-exec": true,
}

// goSemver is a full semantic version, pseudo-versions included: what the
// module proxy and checksum database fix forever.
var goSemver = lazyregexp.New(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// goCmd checks go get, go install and go run of a module from the network.
//
// Pinned: a full semantic version (v1.2.3, v1.2.3-rc.1, a pseudo-version),
// which the checksum database fixes, a commit hash (12 hex or more), and
// @none. Not pinned: @latest, @upgrade, @patch, a branch or tag name that
// is not a full version, a version prefix (@v1, @v1.2), go get without a
// version (which upgrades), and any version with -insecure (no checksum
// check). go install and go run without @version build what the current
// module's go.mod and go.sum fix, which is pinned. Operands whose first
// element has no dot are local (./x, std, cmd/go, a module-local path).
func (sc *shellScan) goCmd(args []arg, ln int) {
	if len(args) == 0 {
		return
	}
	sub := args[0].s
	switch sub {
	case "get", "install", "run":
	default:
		return
	}
	insecure := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a.s, "-") {
			name, _, hasVal := strings.Cut(a.s, "=")
			if name == "-insecure" {
				insecure = true
			}
			if goValueOpts[name] && !hasVal {
				i++
			}
			continue
		}
		if a.dyn {
			if sub == "run" {
				return
			}
			continue
		}
		mod, ver, hasVer := strings.Cut(a.s, "@")
		first, _, _ := strings.Cut(mod, "/")
		if strings.HasPrefix(mod, ".") || strings.HasPrefix(mod, "/") || !strings.Contains(first, ".") || strings.HasSuffix(mod, ".go") {
			if sub == "run" {
				return // go run ./cmd args...
			}
			continue
		}
		fixed := ver == "none" || goSemver.MatchString(ver) && !insecure || isHex(ver, 0) && len(ver) >= 12
		switch {
		case !hasVer && sub != "get":
			// Built at the version the current go.mod requires.
		case fixed:
		case !hasVer:
			sc.r.add(ruleGoInstallLatest, ln, a.s, fmt.Sprintf("go get %s without a version upgrades to whatever was released last; name a full version: go get %s@vX.Y.Z", a.s, mod))
		case insecure && goSemver.MatchString(ver):
			sc.r.add(ruleGoInstallLatest, ln, a.s, fmt.Sprintf("go %s -insecure %s skips the checksum check that makes a version immutable; drop -insecure", sub, a.s))
		default:
			sc.r.add(ruleGoInstallLatest, ln, a.s, fmt.Sprintf("go %s %s resolves @%s to whatever was pushed last (only a full version or a commit is fixed by the checksum database); name one: %s@vX.Y.Z", sub, a.s, ver, mod))
		}
		if sub == "run" {
			return // the rest are the program's arguments
		}
	}
}

// osPackageManagers maps the OS package managers to their install verbs.
var osPackageManagers = map[string]string{
	"apt-get": "install", "apt": "install", "aptitude": "install", "apk": "add", "yum": "install module", "dnf": "install module",
	"microdnf": "install module", "tdnf": "install", "zypper": "install in", "gem": "install i",
}

// osValueOpts are options of the OS package managers that take a value.
var osValueOpts = map[string]bool{
	"-t": true, "--target-release": true, "-o": true, "--option": true, "-c": true, "--config-file": true,
	"--virtual": true, "--repository": true, "-X": true, "--root": true, "-p": true, "--arch": true,
	"--enablerepo": true, "--disablerepo": true, "--setopt": true, "--installroot": true, "--releasever": true,
	"-v": true, "--version": true, "--install-dir": true, "-i": true, "--bindir": true, "--source": true, "-s": true,
	"--repo": true, "-r": true, "--from": true, "--exclude": true, "-x": true, "--cache-dir": true,
}

// osPackages checks apt-get/apt/apk/yum/dnf/microdnf/zypper/gem installs
// for versions, as hadolint's DL3008/DL3018/DL3033/DL3041/DL3037/DL3028
// do, and reports one finding per command naming the unpinned packages.
func (sc *shellScan) osPackages(p string, args []arg, ln int) {
	verbs := strings.Fields(osPackageManagers[p])
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].s, "-") {
		if osValueOpts[args[i].s] {
			i++
		}
		i++
	}
	if i >= len(args) {
		return
	}
	verb := args[i].s
	ok := false
	for _, v := range verbs {
		ok = ok || verb == v
	}
	if !ok {
		return
	}
	var loose []string
	rest := args[i+1:]
	if verb == "module" {
		// dnf/yum module install NAME[:STREAM[/PROFILE]]: a stream pins it.
		if len(rest) == 0 || rest[0].s != "install" {
			return
		}
		for _, a := range rest[1:] {
			if !strings.HasPrefix(a.s, "-") && !a.dyn && !strings.Contains(a.s, ":") {
				loose = append(loose, a.s)
			}
		}
		rest = nil
	}
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a.s == "--" {
			if p == "gem" {
				break // what follows goes to the gem's build
			}
			continue
		}
		if strings.HasPrefix(a.s, "-") {
			if p == "gem" && (a.s == "-v" || a.s == "--version" || strings.HasPrefix(a.s, "--version=")) {
				return // gem install pkg -v x.y.z
			}
			if osValueOpts[a.s] {
				j++
			}
			continue
		}
		if a.dyn || osPackagePinned(p, a.s) || p == "gem" && (a.s == "true" || a.s == "false") {
			continue
		}
		loose = append(loose, a.s)
	}
	if len(loose) == 0 {
		return
	}
	shown := loose[:min(3, len(loose))]
	more := ""
	if len(loose) > 3 {
		more = fmt.Sprintf(" and %d more", len(loose)-3)
	}
	form := map[string]string{
		"apt-get": "apt-get install %s=<version>", "apt": "apt install %s=<version>", "aptitude": "aptitude install %s=<version>",
		"apk": "apk add %s=<version>", "yum": "yum install %s-<version>", "dnf": "dnf install %s-<version>",
		"microdnf": "microdnf install %s-<version>", "tdnf": "tdnf install %s-<version>", "zypper": "zypper install %s=<version>",
		"gem": "gem install %s:<version>",
	}[p]
	sc.r.add(ruleOSPackageUnpinned, ln, strings.Join(shown, " "), fmt.Sprintf("%s %s %s%s without a version, so each build installs the distribution's newest build; pin it: %s (or keep the package set in a base image pinned by digest)", p, verb, strings.Join(shown, ", "), more, fmt.Sprintf(form, shown[0])))
}

// osPackagePinned says whether one package operand names a version.
func osPackagePinned(p, pkg string) bool {
	switch {
	case strings.HasPrefix(pkg, "/") || strings.HasPrefix(pkg, "./") || strings.Contains(pkg, "://"):
		return true // a local file or URL
	case strings.HasSuffix(pkg, ".deb") || strings.HasSuffix(pkg, ".rpm") || strings.HasSuffix(pkg, ".apk") || strings.HasSuffix(pkg, ".gem"):
		return true
	}
	switch p {
	case "apt-get", "apt", "aptitude":
		return strings.Contains(pkg, "=")
	case "apk":
		return strings.ContainsAny(pkg, "=~<>")
	case "zypper":
		return strings.ContainsAny(pkg, "=<>")
	case "gem":
		return strings.Contains(pkg, ":")
	default: // yum, dnf, microdnf, tdnf: name-version
		if strings.ContainsAny(pkg, "=<>") {
			return true
		}
		parts := strings.Split(pkg, "-")
		for _, part := range parts[1:] {
			if part != "" && part[0] >= '0' && part[0] <= '9' {
				return true
			}
		}
		return false
	}
}

// choco checks choco install PKG for --version (and says to require
// checksums).
func (sc *shellScan) choco(p string, args []arg, ln int) {
	if p != "cinst" {
		if len(args) == 0 || !strings.EqualFold(args[0].s, "install") && !strings.EqualFold(args[0].s, "upgrade") {
			return
		}
		args = args[1:]
	}
	var pkgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		low := strings.ToLower(a.s)
		name, _, hasVal := strings.Cut(low, "=")
		switch {
		case name == "--version" || name == "-v" || name == "--requiredversion":
			return
		case name == "-s" || name == "--source" || name == "--params" || name == "--package-parameters" ||
			name == "--ia" || name == "--install-arguments" || name == "--checksum" || name == "--checksum64":
			if !hasVal {
				i++
			}
		case strings.HasPrefix(low, "-"):
		case a.dyn:
		default:
			pkgs = append(pkgs, a.s)
		}
	}
	if len(pkgs) == 0 {
		return
	}
	sc.r.add(ruleWindowsPackageUnpinned, ln, strings.Join(pkgs, " "), fmt.Sprintf("choco install %s has no --version, so the newest package (and whatever installer it downloads) is installed; pin it: choco install %s --version <x.y.z> --require-checksums", strings.Join(pkgs, " "), pkgs[0]))
}

// nuget checks nuget install, dotnet add package, and restores (nuget
// restore, dotnet restore, msbuild /t:restore) for a version or locked
// mode, as Scorecard does.
func (sc *shellScan) nuget(p string, args []arg, ln int) {
	has := func(opts ...string) bool {
		for _, a := range args {
			for _, o := range opts {
				if strings.EqualFold(a.s, o) || strings.HasPrefix(strings.ToLower(a.s), strings.ToLower(o)+"=") {
					return true
				}
			}
		}
		return false
	}
	if len(args) == 0 {
		return
	}
	sub := strings.ToLower(args[0].s)
	switch {
	case p == "nuget" && sub == "install":
		if len(args) < 2 || strings.HasSuffix(args[1].s, "packages.config") || has("-Version") {
			return
		}
		sc.r.add(ruleWindowsPackageUnpinned, ln, args[1].s, fmt.Sprintf("nuget install %s has no -Version, so the newest release is installed; pin it: nuget install %s -Version <x.y.z>", args[1].s, args[1].s))
	case p == "nuget" && sub == "restore":
		if !has("-LockedMode") {
			sc.r.add(ruleWindowsPackageUnpinned, ln, "nuget restore", "nuget restore without -LockedMode may resolve versions anew; restore exactly the lock file: nuget restore -LockedMode (with packages.lock.json committed)")
		}
	case p == "dotnet" && sub == "add":
		i := 1
		if i < len(args) && !strings.EqualFold(args[i].s, "package") {
			i++ // the project
		}
		if i+1 >= len(args) || !strings.EqualFold(args[i].s, "package") {
			return
		}
		if has("-v", "--version") {
			return
		}
		pkg := args[i+1].s
		sc.r.add(ruleWindowsPackageUnpinned, ln, pkg, fmt.Sprintf("dotnet add package %s has no --version, so the newest release is added; pin it: dotnet add package %s --version <x.y.z>", pkg, pkg))
	case p == "dotnet" && sub == "restore":
		if !has("--locked-mode") {
			sc.r.add(ruleWindowsPackageUnpinned, ln, "dotnet restore", "dotnet restore without --locked-mode may resolve versions anew; restore exactly the lock file: dotnet restore --locked-mode (with packages.lock.json committed)")
		}
	case p == "msbuild":
		if has("/t:restore", "-t:restore") && !has("/p:RestoreLockedMode=true", "-p:RestoreLockedMode=true") {
			sc.r.add(ruleWindowsPackageUnpinned, ln, "msbuild /t:restore", "msbuild /t:restore without /p:RestoreLockedMode=true may resolve versions anew; restore exactly the lock file: msbuild /t:restore /p:RestoreLockedMode=true")
		}
	}
}
