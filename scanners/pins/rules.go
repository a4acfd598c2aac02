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
	ruleGoInstallLatest = rule("go-install-latest", scanners.SeverityMedium,
		"go install @latest or a branch",
		"@latest and branch names resolve to whatever was pushed last.",
		"Install a released version: go install module/cmd@vX.Y.Z.")
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
		"trust_remote_code=True runs the model repository's Python code",
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
	ruleUnparsed = rule("unparsed", scanners.SeverityLow,
		"File could not be parsed for pins",
		"A file the check cannot read is a file whose dependencies nobody checked.",
		"Fix the syntax error, or add the file to the ignore list if it is not meant to be built.")
)

var allRules = []scanners.Rule{
	ruleImageLatest, ruleImageNotDigest, ruleImageVariable,
	rulePipUnpinned, rulePipNoHash, ruleExtraIndex, ruleVCSUnpinned, rulePyprojectNoLock,
	ruleCondaUnpinned, ruleNPMUnpinned, ruleGoInstallLatest,
	ruleCurlPipeShell, ruleDownloadExec, ruleDownloadNoChecksum, ruleGitCloneUnpinned,
	ruleModuleUnversioned, ruleActionNotSHA,
	ruleHFRevision, ruleTrustRemoteCode, ruleTorchHubUnpinned, ruleTorchLoadUnsafe,
	ruleUnparsed,
}
