// Package scanners holds mlwarden's contract: the Artifact a source hands over,
// the Finding a check returns, the Scanner interface every check implements, and
// the Dispatcher that walks each source once and feeds every scanner that wants
// an artifact.
//
// The contract is small on purpose, in the spirit of go-containerregistry's
// v1.Image: a source knows where bytes come from and nothing about checks; a
// scanner knows one check and nothing about where bytes come from.
package scanners

import (
	"context"
	"errors"
	"io"
	"io/fs"
)

// Check names. Each finding names exactly one of them.
const (
	CheckSecrets    = "secrets"
	CheckPins       = "pins"
	CheckModels     = "models"
	CheckSignatures = "signatures"
	CheckCUDA       = "cuda"
	CheckMisconfig  = "misconfig"
	CheckVulns      = "vulns"
	// CheckPolicy names the findings of the user's CEL policies
	// (scanners/policy): rule IDs policy/<name>. It is not a check of the
	// catalog: policies run after the checks, on each target's result.
	CheckPolicy = "policy"
	// CheckNode is `mlwarden node`'s audit of a running node (node/).
	CheckNode = "node"
)

// TargetKind says what a target is. The values are part of the JSON report.
type TargetKind string

// Target kinds.
const (
	KindDir    TargetKind = "dir"
	KindFile   TargetKind = "file"
	KindImage  TargetKind = "image"
	KindRepo   TargetKind = "repo"
	KindScript TargetKind = "script"
	// KindHub is a repository on a Hugging Face Hub (a model, dataset or
	// space, hf:ORG/NAME), read at one commit through the Hub's HTTP API.
	// Its artifacts have an FS (the repository's tree, read in ranges), as
	// a directory's have.
	KindHub TargetKind = "hub"
	// KindCluster is what a Kubernetes cluster holds now (k8s:CONTEXT[/NAMESPACE],
	// read through its API): each object is a YAML artifact named
	// NAMESPACE/KIND/NAME.yaml. The images it runs are targets of their own.
	KindCluster TargetKind = "cluster"
	// KindNode is a node audited by `mlwarden node`: a running node or a
	// node tree (--root). Its configuration files' artifacts have an FS.
	KindNode TargetKind = "node"
)

// Target describes one scanned target in the report.
type Target struct {
	Name   string     `json:"name"`
	Kind   TargetKind `json:"kind"`
	Digest string     `json:"digest,omitempty"`
	// Notes are facts about the target a reader needs, such as "shallow clone:
	// history before <commit> not scanned".
	Notes []string `json:"notes,omitempty"`
	// Skipped counts the directories and files --skip-dirs and --skip-files
	// left out (a note names them).
	Skipped int `json:"skipped,omitempty"`
	// VCS is the repository a git: target, or a directory scanned in a
	// git scope (--since-commit, --staged, --new-only), was read from.
	VCS *VCS `json:"vcs,omitempty"`
	// Properties are facts the source learnt about the target as a whole,
	// for the checks that judge it (FinishTarget) and the reports: a Hub
	// repository's card data ("hub.license", "hub.license_name",
	// "hub.license_link") and access gate ("hub.gated": "auto" or
	// "manual", "hub.gate_prompt", "hub.gate_fields").
	Properties map[string]string `json:"properties,omitempty"`
}

// VCS names the repository and revision a target was read at, and the
// scope of the scan when it was not the whole (SARIF's
// versionControlProvenance).
type VCS struct {
	// RepositoryURI is the remote's URL without a password, or a file:
	// URL of the local repository.
	RepositoryURI string `json:"repository_uri,omitempty"`
	// Revision is the commit scanned (HEAD, or the commit of a base scan).
	Revision string `json:"revision,omitempty"`
	// Branch is the branch checked out, where there is one.
	Branch string `json:"branch,omitempty"`
	// Scope says what of the target was scanned when not all of it:
	// "since-commit <sha>", "staged", "new-only <sha>".
	Scope string `json:"scope,omitempty"`
}

// ArtifactKind says what kind of thing an artifact's content is.
type ArtifactKind string

// Artifact kinds. Target-level facts are artifacts too, so scanners see one
// stream.
const (
	// ArtifactFile is a file's bytes: on disk, in an image layer or a git blob.
	ArtifactFile ArtifactKind = "file"
	// ArtifactImageConfig is an image's config blob (OCI/Docker config JSON:
	// Env, Labels, Cmd, Entrypoint, User, ExposedPorts, history).
	ArtifactImageConfig ArtifactKind = "image-config"
	// ArtifactPatch is the added lines of one file in one git commit. Lines maps
	// them back to the line numbers of the file at that commit.
	ArtifactPatch ArtifactKind = "patch"
)

// Artifact is one file-like thing plus its origin. Its content is handed to
// Scanner.Scan separately, so an Artifact is cheap to copy and compare.
type Artifact struct {
	Kind ArtifactKind
	// Target is the name of the target the artifact belongs to, as in Target.Name.
	Target string
	// TargetKind is the kind of that target.
	TargetKind TargetKind
	// Path is the slash-separated path inside the target (relative to a
	// directory target's root, absolute inside an image, relative to a
	// repository's root).
	Path string
	// Size is the content's length in bytes.
	Size int64
	// Mode is the file mode when the source knows it.
	Mode fs.FileMode

	// Layer is the digest of the image layer the file came from, LayerIndex
	// its 0-based position and CreatedBy the history entry that made it.
	Layer      string
	LayerIndex int
	CreatedBy  string
	// Commit is the git commit the content came from (history scans).
	Commit string
	// Digest is the digest of the image the artifact came from, as in
	// Target.Digest (the index or manifest digest), when the source knows
	// it: checks that ask the registry about the image (signatures) ask
	// about exactly these bytes, not whatever the tag points to now.
	Digest string
	// Note is a fact about this artifact that every finding in it should carry,
	// such as "deleted in layer 4 — still present in the image".
	Note string
	// Lines, when non-nil, maps content line i+1 (1-based) to Lines[i], the
	// line number in the original file. Patch artifacts set it.
	Lines []int
	// FS is the target's file system when the target is on the local disk (a
	// directory, a file's directory, a repository's working tree), rooted at
	// the target's root so that Path names the artifact inside it. It is an
	// os.Root's FS: no name, ".." or symlink reaches outside it, and its
	// files are *os.File (io.ReaderAt). Checks that look at an artifact's
	// neighbours (a lock file beside pyproject.toml, model.sig beside the
	// weights) read them through FS, never by reopening Target, which is
	// only the report's display name. It is nil for images, git history and
	// streams.
	FS fs.FS
	// Container is the path of the archive the artifact is a member of
	// (its Path is Container + "!" + the member's name), "" for a file not
	// in an archive. Members have no FS: they are not on disk.
	Container string
}

// OriginalLine maps a 1-based line of the artifact's content to the line in
// the original file.
func (a *Artifact) OriginalLine(line int) int {
	if a.Lines == nil || line <= 0 || line > len(a.Lines) {
		return line
	}
	return a.Lines[line-1]
}

// Source turns one target into a stream of artifacts. It knows where each
// byte came from and nothing about checks.
type Source interface {
	// Target describes the target for the report.
	Target() Target
	// Walk hands every artifact of the target to sink. It returns an error
	// when the target as a whole could not be read; a single file that could
	// not be read goes to sink.Error and the walk goes on.
	Walk(ctx context.Context, sink Sink) error
}

// Fanout is a source that finds, while it walks, more targets to scan (a
// k8s: target: the images the cluster runs, each once). The dispatcher
// asks More once the walk is over and walks each source it returns after
// the others, as a target of its own; a name already among the run's
// targets is not walked again. The fanout source closes them (io.Closer).
type Fanout interface {
	Source
	More() []Source
}

// Sink receives a source's artifacts. Its methods are safe to call from
// several goroutines, so a source may walk in parallel.
type Sink interface {
	// Artifact scans one artifact. r is its content, valid until Artifact
	// returns. When r is also an io.ReaderAt (an *os.File), it is read in place
	// and only as far as the scanners need; otherwise it is read once and
	// buffered (in memory, or in an anonymous temporary file when large).
	// A non-nil error means the walk must stop (the context was cancelled).
	Artifact(a *Artifact, r io.Reader) error
	// Error records a file that could not be scanned.
	Error(e Error)
}

// Content is an artifact's bytes as a scanner sees them: readable in order or
// at any offset, of a known size. Every scanner gets its own Content, so
// reading one does not move another's offset. *io.SectionReader satisfies it.
type Content interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	Size() int64
}

// ErrIncomplete is wrapped by the error a Scanner returns when a limit (a
// size, a count, a depth, a decompression budget) stopped it before it had
// scanned all of an artifact. Reaching a limit is never a clean pass: the
// dispatcher records the error, and the run exits 2.
var ErrIncomplete = errors.New("not scanned in full")

// Scanner is one check. Implementations must be safe for concurrent use: the
// dispatcher calls Scan on different artifacts at once.
//
// A scanner never executes, imports or unpickles what it scans, and never
// panics the run: content it cannot parse is a finding. Scan returns an error
// only when it could not read its input, or when it reached a limit and did
// not scan all of it (an error wrapping ErrIncomplete, with the findings it
// made); the run then exits 2.
type Scanner interface {
	// Check is the check's name, one of the Check constants.
	Check() string
	// Rules lists every rule the check can report.
	Rules() []Rule
	// Wants says from the artifact's origin and the first bytes of its content
	// (at most HeadSize) whether Scan should see it. It must be cheap.
	Wants(a *Artifact, head []byte) bool
	// Scan examines one artifact.
	Scan(ctx context.Context, a *Artifact, c Content) ([]Finding, error)
}

// HeadSize is the most bytes handed to Scanner.Wants.
const HeadSize = 8 << 10

// SmallFile is the size up to which a file's content is read whole, once,
// into memory and shared by every check that wants it. A check that needs
// the whole of such a file (to hash it) costs no further read.
const SmallFile = 1 << 20

// Rider is implemented by a check that wants an artifact only when another
// check does, because then the dispatcher reads it anyway: the signatures
// check hashes the small files others scan, but never makes the dispatcher
// read a file (a dataset's images) just for that.
type Rider interface {
	Rides(a *Artifact, head []byte) bool
}

// PrefixReader is implemented by a check that reads only the start of some
// artifacts: the models check reads a safetensors file's header, never its
// tensors. Prefix returns how many bytes from the start of a its Scan reads
// at most, and true; false when it may read anywhere. When every check that
// wants a streamed artifact too large to hold in memory (a weights file in
// an image layer) reads no more than a prefix of it, the dispatcher keeps
// the head and that prefix in memory and reads the rest past — hashed, when
// the artifact is a component — instead of spooling it to disk. Its Content
// still has the artifact's whole size; a read past the prefix is an error
// (ErrPastPrefix), never a silent short read.
type PrefixReader interface {
	Prefix(a *Artifact, head []byte) (int64, bool)
}

// RuleLookup is implemented by a check that can describe one of its rules
// without listing them all: a per-job sbatch process that reports one
// secret described the secrets check's ~250 rules for its title and fix.
// Rule(id) is the rule of Rules() with that ID.
type RuleLookup interface {
	Rule(id string) (Rule, bool)
}

// RuleOf returns the rule with ID id of the first of checks that lists it,
// the entry a merged rule list (catalog.RulesOf) holds, asking a
// RuleLookup for that one rule.
func RuleOf(checks []Scanner, id string) (Rule, bool) {
	for _, c := range checks {
		if l, ok := c.(RuleLookup); ok {
			if r, ok := l.Rule(id); ok {
				return r, true
			}
			continue
		}
		for _, r := range c.Rules() {
			if r.ID == id {
				return r, true
			}
		}
	}
	return Rule{}, false
}

// ErrPastPrefix is the error of a read past the prefix a PrefixReader
// declared.
var ErrPastPrefix = errors.New("read past the prefix the check declared (a bug in the check)")

// TargetFinisher is implemented by a check that judges a target as a whole,
// once every artifact of it has been handed over. The dispatcher calls
// FinishTarget after the target's walk: a checksum manifest seen early in the
// walk is verified at the end, against digests taken from the same single
// read that fed the other checks. A finisher that keeps facts from Scan for
// FinishTarget also implements StateKeeper, so that a source that replays
// cached results hands those facts back.
type TargetFinisher interface {
	FinishTarget(ctx context.Context, t Target) ([]Finding, error)
}

// Expander opens the archives and compressed files found among a target's
// artifacts and hands their members to a sink as artifacts of their own
// (Artifact.Container set), so that the checks that read text see inside
// them (scanners/archive). The dispatcher calls it for an artifact that is
// not itself a member; nested archives are the expander's.
type Expander interface {
	// Expands says from the artifact's origin and head whether it is an
	// archive to open. It must be cheap.
	Expands(a *Artifact, head []byte) bool
	// Expand hands a's members to members and returns the findings about
	// what it could not scan; an error wrapping ErrIncomplete when a limit
	// stopped it (exit 2).
	Expand(ctx context.Context, a *Artifact, c Content, members Sink) ([]Finding, error)
}

// ArchiveReader is implemented by a check that reads inside archives
// itself (the models check looks for pickles in every archive): the
// dispatcher hands it no archive members, so nothing is reported twice.
type ArchiveReader interface {
	ReadsArchives() bool
}

// BytesScanner scans a byte slice that came from inside an artifact (a string
// in a pickle, a model's metadata) and returns findings located at a. It is
// the hand-over point between checks: the models check passes the strings it
// finds to the secrets check through one.
type BytesScanner func(ctx context.Context, a *Artifact, data []byte) []Finding
