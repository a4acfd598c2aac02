package pins

import "github.com/mlwarden/mlwarden/scanners"

func rule(id string, sev scanners.Severity, title, why, fix string) scanners.Rule {
	return scanners.Rule{ID: "pins/" + id, Check: scanners.CheckPins, Severity: sev, Title: title, Why: why, Fix: fix}
}

// The pins check's rules. Severities follow what an attacker (or a careless
// upstream) gains: code that runs without review is high, a moving version is
// medium, hygiene is low.
var (
	ruleImageLatest = rule("image-latest", scanners.SeverityHigh,
		"Container image by :latest or with no tag",
		"latest moves with every push: each run may get a different image, and a compromised push reaches you at once.",
		"Reference the image by digest: name:tag@sha256:<digest> (mlwarden pin FILE rewrites it).")
	ruleImageNotDigest = rule("image-not-digest", scanners.SeverityMedium,
		"Container image by tag, not by digest",
		"A tag is a promise somebody else can change: whoever can push to it decides what runs on your GPUs.",
		"Reference the image by digest: name:tag@sha256:<digest> (mlwarden pin FILE rewrites it).")
	ruleImageVariable = rule("image-variable", scanners.SeverityLow,
		"Container image chosen by a variable with no pinned default",
		"The image is whatever the caller passes; nothing in the file fixes what runs.",
		"Give the variable a default pinned by digest (ARG BASE=name:tag@sha256:<digest>) and pass digests when overriding it.")
	rulePipUnpinned = rule("pip-unpinned", scanners.SeverityMedium,
		"Python package installed without an exact version and hashes",
		"A range or a bare name installs whatever the index serves today, including a hijacked or typo-squatted release.",
		"Pin exactly with hashes: pkg==x.y.z --hash=sha256:<hash> (pip-compile --generate-hashes or uv pip compile --generate-hashes), and install with --require-hashes.")
	rulePipNoHash = rule("pip-no-hash", scanners.SeverityLow,
		"Requirements pinned by version but not by hash",
		"An exact version can still be re-uploaded under another file name or served by a different index; only a hash fixes the bytes.",
		"Add hashes: pkg==x.y.z --hash=sha256:<hash> (pip-compile --generate-hashes) and install with --require-hashes.")
	ruleExtraIndex = rule("pip-extra-index-url", scanners.SeverityHigh,
		"pip --extra-index-url (dependency confusion)",
		"pip picks the highest version from every index: a name registered on the public index beats your private one (the 2022 torchtriton incident).",
		"Use a single --index-url that proxies the public index, or pin every package with --hash so a substituted file cannot install.")
	ruleVCSUnpinned = rule("vcs-unpinned", scanners.SeverityMedium,
		"Package installed from a VCS URL without a commit",
		"A branch or tag in a git URL moves; the next install gets different code.",
		"Pin the full commit: pkg @ git+https://host/owner/repo@<40-hex commit>.")
	rulePyprojectNoLock = rule("pyproject-unlocked", scanners.SeverityLow,
		"pyproject.toml dependency ranges with no lock file beside it",
		"Ranges are fine for a library, but an application installed from them gets whatever is newest at install time.",
		"Commit a lock file next to pyproject.toml (uv lock, poetry lock, pdm lock) and install from it (uv sync --locked).")
	ruleCondaUnpinned = rule("conda-unpinned", scanners.SeverityMedium,
		"Conda package without a version",
		"The solver picks the newest build from every channel at install time.",
		"Pin name=version=build (conda env export, or conda-lock for an explicit lock file).")
	ruleNPMUnpinned = rule("npm-global-unpinned", scanners.SeverityMedium,
		"npm install -g without an exact version",
		"Global installs bypass any lock file; the newest release runs with your privileges.",
		"Install an exact version: npm install -g pkg@x.y.z (or use a package.json with a committed lock file and npm ci).")
	ruleNPMPackageUnpinned = rule("npm-unpinned", scanners.SeverityMedium,
		"npm/yarn/pnpm package added or run by npx without an exact version",
		"npm install PKG, yarn add, pnpm add and npx PKG take the newest release matching the range at that moment; npx runs it at once.",
		"Name an exact version: npm install pkg@x.y.z (npx pkg@x.y.z), commit the lock file, and install in CI with npm ci.")
	ruleNPMNotCI = rule("npm-install-not-ci", scanners.SeverityLow,
		"npm install / yarn install without the lock file enforced",
		"npm install (and yarn install without --frozen-lockfile) may resolve ranges anew and rewrite the lock file, so CI does not install what was reviewed.",
		"Install exactly the lock file: npm ci (yarn install --frozen-lockfile, or --immutable for yarn 2+; pnpm install --frozen-lockfile).")
	ruleGoInstallLatest = rule("go-install-latest", scanners.SeverityMedium,
		"go install/get/run at @latest, a branch, a partial version or no version",
		"@latest, branch names, version prefixes (@v1) and go get without a version resolve to whatever was pushed last; only a full version or a commit is fixed by the checksum database.",
		"Name a full version or a commit: go install module/cmd@vX.Y.Z (go get module@vX.Y.Z, go run module/cmd@vX.Y.Z).")
	ruleOSPackageUnpinned = rule("os-package-unpinned", scanners.SeverityLow,
		"OS package installed without a version (apt, apk, yum/dnf, zypper, gem)",
		"The distribution's newest build is installed at build time, so two builds of the same file can differ (hadolint DL3008, DL3018, DL3033, DL3037, DL3041, DL3028).",
		"Pin the version: apt-get install pkg=<version>, apk add pkg=<version>, dnf/yum install pkg-<version>, zypper install pkg=<version>, gem install pkg:<version> (or build on a base image pinned by digest and keep the package set there).")
	ruleWindowsPackageUnpinned = rule("windows-package-unpinned", scanners.SeverityMedium,
		"Chocolatey or NuGet package without a version, or a NuGet restore without the lock file",
		"choco install, nuget install and dotnet add package take the newest release; nuget/dotnet restore without locked mode may resolve anew.",
		"Pin the version: choco install pkg --version x.y.z --require-checksums, nuget install pkg -Version x.y.z, dotnet add package pkg --version x.y.z; restore with --locked-mode (nuget -LockedMode, msbuild /p:RestoreLockedMode=true).")
	ruleRequirementsUnseen = rule("requirements-not-in-target", scanners.SeverityMedium,
		"pip installs a requirements file that is not in what was scanned",
		"pip install -r FILE (or -c FILE, conda env create -f FILE) installs whatever that file says, and the file is not part of this target, so nothing checked its pins; without --require-hashes any version or file can come in.",
		"Commit the file beside the script so it is checked, and install with hashes: pip install --require-hashes -r requirements.txt (pip-compile --generate-hashes or uv pip compile --generate-hashes writes them).")
	ruleCurlPipeShell = rule("curl-pipe-shell", scanners.SeverityHigh,
		"Script downloaded and run in one step (curl | sh)",
		"Whatever the server (or anybody between) returns runs at once, unreviewed and unverified.",
		"Download to a file, verify its sha256 (echo '<sha256>  file' | sha256sum -c), then run it; better, pin a released artifact by digest.")
	ruleDownloadExec = rule("download-exec", scanners.SeverityHigh,
		"Downloaded file executed without checksum verification",
		"The file is whatever the server returned; nothing checks it before it runs.",
		"Verify before running: echo '<sha256>  file' | sha256sum -c - (or gpg/cosign verify-blob).")
	ruleDownloadNoChecksum = rule("download-no-checksum", scanners.SeverityMedium,
		"Weights, dataset or archive downloaded without checksum verification",
		"A replaced checkpoint or dataset changes what the model learns or runs (pickled weights execute code on load).",
		"Verify after download: echo '<sha256>  file' | sha256sum -c - ; for Dockerfile ADD use --checksum=sha256:<hash>.")
	ruleGitCloneUnpinned = rule("git-clone-unpinned", scanners.SeverityMedium,
		"git clone not followed by a checkout of a full commit",
		"A clone gets whatever the default branch (or a movable tag) points at today.",
		"Check out the commit: git clone URL dir && git -C dir checkout <40-hex commit>.")
	ruleModuleUnversioned = rule("module-unversioned", scanners.SeverityLow,
		"module load without a version",
		"The default version of an environment module changes when the site installs a new one.",
		"Load an explicit version: module load name/x.y.z.")
	ruleActionNotSHA = rule("action-not-sha", scanners.SeverityMedium,
		"GitHub Action not pinned to a full commit SHA",
		"Tags and branches of an action can be moved to malicious code (the tj-actions/changed-files compromise, 2025).",
		"Pin the 40-hex commit and keep the tag as a comment: uses: owner/repo@<40-hex sha> # vX.Y.Z.")
	ruleHFRevision = rule("hf-revision", scanners.SeverityMedium,
		"Hugging Face model or dataset without a pinned revision",
		"Without revision= the main branch is fetched; the repository owner (or whoever takes the account) can change the weights or code.",
		"Pass the commit: revision=\"<40-hex commit>\" (huggingface-cli/hf download: --revision <commit>).")
	ruleTrustRemoteCode = rule("trust-remote-code", scanners.SeverityHigh,
		"trust_remote_code=True or --trust-remote-code runs the model repository's Python code",
		"Loading the model executes code from the hub repository, with your credentials and GPUs.",
		"Avoid it, or review the code and pin revision=\"<40-hex commit>\" in the same call so reviewed code is what runs.")
	ruleTorchHubUnpinned = rule("torch-hub-unpinned", scanners.SeverityMedium,
		"torch.hub.load without a pinned ref",
		"torch.hub.load fetches and runs hubconf.py from the repository's default branch.",
		"Pin the commit in the repo string: torch.hub.load(\"owner/repo:<40-hex commit>\", ...) and set trust_repo=False.")
	ruleTorchLoadUnsafe = rule("torch-load-unsafe", scanners.SeverityHigh,
		"torch.load without weights_only=True",
		"torch.load unpickles the file: a crafted checkpoint runs code on load (weights_only defaults to True only from torch 2.6).",
		"Pass weights_only=True, or store weights as safetensors and load them with safetensors.torch.load_file.")
	ruleHubRevisionBranch = rule("hub-revision-branch", scanners.SeverityMedium,
		"Hub repository scanned at a branch or tag, not a commit",
		"A branch or tag moves: the files scanned today are not what the same name downloads tomorrow, and whoever can push to the repository chooses them.",
		"Scan and load the commit the report names as the target's digest: hf:ORG/NAME@<40-hex commit>, from_pretrained(..., revision=\"<40-hex commit>\").")
	ruleUnparsed = rule("unparsed", scanners.SeverityLow,
		"File could not be parsed for pins",
		"A file the check cannot read is a file whose dependencies nobody checked.",
		"Fix the syntax error, or add the file to the ignore list if it is not meant to be built.")
)

var allRules = []scanners.Rule{
	ruleImageLatest, ruleImageNotDigest, ruleImageVariable,
	rulePipUnpinned, rulePipNoHash, ruleExtraIndex, ruleVCSUnpinned, rulePyprojectNoLock,
	ruleCondaUnpinned, ruleNPMUnpinned, ruleNPMPackageUnpinned, ruleNPMNotCI, ruleGoInstallLatest,
	ruleOSPackageUnpinned, ruleWindowsPackageUnpinned, ruleRequirementsUnseen,
	ruleCurlPipeShell, ruleDownloadExec, ruleDownloadNoChecksum, ruleGitCloneUnpinned,
	ruleModuleUnversioned, ruleActionNotSHA,
	ruleHFRevision, ruleTrustRemoteCode, ruleTorchHubUnpinned, ruleTorchLoadUnsafe,
	ruleHubRevisionBranch,
	ruleUnparsed,
}
