package pins

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// pipValueOpts are pip/uv install options that take the next word as value.
var pipValueOpts = map[string]bool{
	"-i": true, "--index-url": true, "-f": true, "--find-links": true, "-t": true, "--target": true,
	"--prefix": true, "--root": true, "--src": true, "--upgrade-strategy": true, "--python-version": true,
	"--platform": true, "--implementation": true, "--abi": true, "--only-binary": true, "--no-binary": true,
	"--progress-bar": true, "--root-user-action": true, "-C": true, "--config-settings": true,
	"--global-option": true, "--install-option": true, "--cache-dir": true, "--log": true, "--trusted-host": true,
	"--proxy": true, "--retries": true, "--timeout": true, "--exists-action": true, "--report": true,
	"--python": true, "-p": true, "--index-strategy": true, "--keyring-provider": true, "--resolution": true,
	"--prerelease": true, "--exclude-newer": true, "--link-mode": true,
	"--default-index": true, "-P": true, "--upgrade-package": true, "--reinstall-package": true,
	"--no-build-package": true, "--no-binary-package": true, "--torch-backend": true, "--group": true,
	"--extra": true, "--overrides": true, "--build-constraints": true, "-b": true,
}

// pipInstall checks the arguments after "pip install" (or "uv pip install"
// when uv, where --index adds an index rather than abbreviating --index-url).
func (sc *shellScan) pipInstall(args []arg, ln int, uv bool) {
	hashes, constrained := false, false
	var reqs []arg
	type reqFile struct {
		file string
		ln   int
	}
	var files []reqFile
	what := "pip install"
	if uv {
		what = "uv pip install"
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a.s, "=")
		switch {
		case a.s == "--require-hashes" || strings.HasPrefix(a.s, "--hash"):
			hashes = true
		case name == "--extra-index-url" || name == "--index" && uv:
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			sc.r.add(ruleExtraIndex, ln, val, fmt.Sprintf("%s %s adds a second package index: pip and uv may install a same-named package from whichever index serves the higher version (dependency confusion, as in the 2022 torchtriton incident); use a single --index-url that proxies the public index, or pin every package with --hash", name, val))
		case name == "-r" || name == "--requirement" || name == "--requirements" || name == "-c" || name == "--constraint" || name == "--constraints":
			constrained = constrained || strings.HasPrefix(name, "-c") || strings.HasPrefix(name, "--constraint")
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			if !args[i].dyn {
				files = append(files, reqFile{val, ln})
			}
		case (strings.HasPrefix(a.s, "-r") || strings.HasPrefix(a.s, "-c")) && len(a.s) > 2 && !strings.HasPrefix(a.s, "--"):
			constrained = constrained || strings.HasPrefix(a.s, "-c")
			if !a.dyn {
				files = append(files, reqFile{a.s[2:], ln})
			}
		case name == "-e" || name == "--editable":
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			if !args[i].dyn {
				sc.judgePip(val, ln, true)
			}
		case pipValueOpts[name]:
			if !hasVal && i+1 < len(args) {
				i++
			}
		case strings.HasPrefix(a.s, "-"):
		default:
			reqs = append(reqs, a)
		}
	}
	if hashes {
		return
	}
	for _, f := range files {
		sc.requirementFile(what, f.file, f.ln, false)
	}
	for _, r := range reqs {
		if r.dyn {
			continue
		}
		if constrained && !isVCS(r.s) {
			continue // versions come from the constraints file, checked on its own
		}
		sc.judgePip(r.s, ln, false)
	}
}

// judgePip reports one requirement given to pip on a command line.
func (sc *shellScan) judgePip(spec string, ln int, editable bool) {
	switch v, name, ref := judgeReq(spec); v {
	case reqVCSUnpinned:
		sc.r.add(ruleVCSUnpinned, ln, spec, vcsMessage(spec, ref))
	case reqUnpinned:
		if editable {
			return
		}
		sc.r.add(rulePipUnpinned, ln, spec, fmt.Sprintf("pip install %q has no exact version and no hash, so each build gets whatever the index serves today (a new, yanked or hijacked release); pin it: %s==<version> --hash=sha256:<hash>, or install a requirements file made with pip-compile --generate-hashes using --require-hashes", spec, name))
	}
}

func vcsMessage(spec, ref string) string {
	if ref == "" {
		return fmt.Sprintf("%q installs a repository's default branch, which moves; pin the full commit: git+https://host/owner/repo@<40-hex commit>", spec)
	}
	return fmt.Sprintf("%q installs ref %q, a branch or tag that can move; pin the full commit instead: …@<40-hex commit>", spec, ref)
}

// pipConfig reports "pip config set global.extra-index-url".
func (sc *shellScan) pipConfig(args []arg, ln int) {
	if len(args) >= 3 && args[0].s == "config" && args[1].s == "set" && strings.HasSuffix(args[2].s, "extra-index-url") {
		val := ""
		if len(args) > 3 {
			val = args[3].s
		}
		sc.r.add(ruleExtraIndex, ln, val, fmt.Sprintf("pip config sets extra-index-url %s: pip may install a same-named package from whichever index serves the higher version (dependency confusion); use one index that proxies the public one, or pin with --hash", val))
	}
}

var condaValueOpts = map[string]bool{
	"-n": true, "--name": true, "-p": true, "--prefix": true, "-c": true, "--channel": true, "--solver": true,
	"--repodata-fn": true, "--subdir": true, "--platform": true, "--clone": true, "-r": true, "--root-prefix": true,
	"--experimental": true, "--channel-priority": true,
}

// condaInstall checks the arguments after "conda install" or "conda create".
func (sc *shellScan) condaInstall(args []arg, ln int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasVal := strings.Cut(a.s, "=")
		switch {
		case a.s == "-f" || a.s == "--file" || strings.HasPrefix(a.s, "--file="):
			return // a spec file, checked on its own when it is one
		case condaValueOpts[name] && strings.HasPrefix(a.s, "-"):
			if !hasVal {
				i++
			}
		case strings.HasPrefix(a.s, "-"):
		case a.dyn:
		default:
			if !condaPinned(a.s) {
				sc.r.add(ruleCondaUnpinned, ln, a.s, fmt.Sprintf("conda package %q has no version, so the solver installs the newest build from every channel; pin it: %s=<version>=<build> (or install from a conda-lock file)", a.s, condaName(a.s)))
			}
		}
	}
}

func condaName(spec string) string {
	if _, after, ok := strings.Cut(spec, "::"); ok {
		spec = after
	}
	return strings.TrimSpace(strings.FieldsFunc(spec, func(r rune) bool { return strings.ContainsRune("=<>!~ [", r) })[0])
}

// condaPinned reports whether a conda match spec names a version (name=1.2,
// name==1.2, name=1.2=build, "name 1.2").
func condaPinned(spec string) bool {
	spec = strings.TrimSpace(spec)
	if _, after, ok := strings.Cut(spec, "::"); ok {
		spec = after
	}
	if spec == "" || strings.ContainsAny(spec[:1], "./~") || strings.Contains(spec, "://") {
		return true // a local package or URL
	}
	i := strings.IndexAny(spec, "=<>!~ ")
	if i < 0 {
		return false
	}
	rest := strings.TrimSpace(spec[i:])
	switch {
	case strings.HasPrefix(rest, "=="):
		return true
	case strings.HasPrefix(rest, "="):
		return true
	case rest != "" && rest[0] >= '0' && rest[0] <= '9':
		return !strings.ContainsAny(rest, "<>")
	}
	return false
}

func isExactSemver(v string) bool {
	v = strings.TrimPrefix(v, "v")
	core, _, _ := strings.Cut(v, "-")
	core, _, _ = strings.Cut(core, "+")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// fetched describes one curl or wget call.
type fetched struct {
	url    string
	file   string // output file, "" for standard output
	stdout bool
}

var curlValueOpts = map[string]bool{
	"-H": true, "--header": true, "-d": true, "--data": true, "--data-raw": true, "--data-binary": true,
	"--data-urlencode": true, "-u": true, "--user": true, "-A": true, "--user-agent": true, "-e": true,
	"--referer": true, "-X": true, "--request": true, "-x": true, "--proxy": true, "-m": true, "--max-time": true,
	"--retry": true, "--retry-delay": true, "--retry-max-time": true, "-w": true, "--write-out": true, "-T": true,
	"--upload-file": true, "-b": true, "--cookie": true, "-c": true, "--cookie-jar": true, "--connect-timeout": true,
	"-K": true, "--config": true, "--cacert": true, "--capath": true, "-E": true, "--cert": true, "--key": true,
	"-r": true, "--range": true, "-F": true, "--form": true, "--limit-rate": true, "-C": true, "--continue-at": true,
	"--resolve": true, "--proto": true, "--proto-redir": true, "-y": true, "-Y": true, "--output-dir": true,
	"--create-file-mode": true, "--netrc-file": true, "--oauth2-bearer": true, "-z": true, "--time-cond": true,
	"--max-redirs": true, "--interface": true, "--dns-servers": true,
}

var wgetValueOpts = map[string]bool{
	"-t": true, "--tries": true, "-T": true, "--timeout": true, "-U": true, "--user-agent": true, "--header": true,
	"--user": true, "--password": true, "-o": true, "--output-file": true, "-a": true, "--append-output": true,
	"-i": true, "--input-file": true, "-B": true, "--base": true, "-w": true, "--wait": true, "-Q": true,
	"--quota": true, "--post-data": true, "--post-file": true, "--load-cookies": true, "--save-cookies": true,
	"--ca-certificate": true, "--certificate": true, "--private-key": true, "-l": true, "--level": true,
	"-A": true, "--accept": true, "-R": true, "--reject": true, "-D": true, "--domains": true, "-I": true,
	"-X": true, "-e": true, "--execute": true, "--limit-rate": true, "--http-user": true, "--http-password": true,
}

// fetchArgs reads curl/wget arguments: the URL and where the body goes.
func fetchArgs(p string, args []arg) (fetched, bool) {
	var f fetched
	remoteName, explicit := false, false
	dir := ""
	outOpt, outLong, valueOpts := "-o", "--output", curlValueOpts
	if p == "wget" {
		outOpt, outLong, valueOpts = "-O", "--output-document", wgetValueOpts
	}
	for i := 0; i < len(args); i++ {
		s := args[i].s
		name, val, hasVal := strings.Cut(s, "=")
		switch {
		case name == outLong:
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			f.file, explicit = val, true
		case p == "wget" && (name == "-P" || name == "--directory-prefix"):
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			dir = val
		case p == "curl" && (s == "-O" || s == "--remote-name" || s == "--remote-name-all"):
			remoteName = true
		case strings.HasPrefix(s, "--"):
			if !hasVal && valueOpts[name] {
				i++
			}
		case strings.HasPrefix(s, "-") && len(s) > 1:
			// A cluster of short options: -fsSLo FILE, -qO-, -qO FILE.
			for j := 1; j < len(s); j++ {
				o := "-" + s[j:j+1]
				if o == outOpt {
					v := s[j+1:]
					if v == "" && i+1 < len(args) {
						i++
						v = args[i].s
					}
					f.file, explicit = v, true
					break
				}
				if p == "curl" && o == "-O" {
					remoteName = true
					continue
				}
				if valueOpts[o] {
					if j == len(s)-1 && i+1 < len(args) {
						i++
					}
					break
				}
			}
		default:
			// Every operand of curl and wget is a URL, with a scheme or
			// without one (curl -fsSL get.example.com | sh).
			if f.url == "" {
				f.url = s
			}
		}
	}
	if f.url == "" {
		// No URL on the command line: it comes from curl's config (-K,
		// .curlrc) or wget's -i list; still a download.
		f.url = "(a URL from " + p + "'s configuration)"
	}
	switch {
	case explicit && f.file == "-":
		f.file, f.stdout = "", true
	case explicit:
	case remoteName || p == "wget":
		f.file = urlBase(f.url)
	default:
		f.stdout = true
	}
	if dir != "" && f.file != "" {
		f.file = path.Join(dir, f.file)
	}
	return f, true
}

// immutableURL reports a URL whose content a commit fixes: a file of a
// GitHub repository at a full commit (raw.githubusercontent.com/O/R/SHA/…,
// github.com/O/R/raw/SHA/…, github.com/O/R/blob/SHA/…?raw=true).
func immutableURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return false
	}
	seg := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	switch u.Host {
	case "raw.githubusercontent.com":
		return len(seg) > 3 && isHex(seg[2], 40)
	case "github.com":
		return len(seg) > 4 && (seg[2] == "raw" || seg[2] == "blob") && isHex(seg[3], 40)
	}
	return false
}

func urlBase(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Path != "" {
		return path.Base(u.Path)
	}
	return path.Base(raw)
}

// dataExts are file types of weights, datasets and archives.
var dataExts = []string{
	".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".onnx", ".h5", ".hdf5", ".pkl", ".pickle", ".gguf", ".ggml",
	".npz", ".npy", ".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.zst", ".tar.bz2", ".zip", ".parquet", ".arrow",
	".tfrecord", ".tfrecords", ".jsonl", ".msgpack", ".joblib", ".pb", ".tflite", ".nemo", ".engine", ".plan",
	".keras", ".mar", ".model", ".7z", ".whl", ".deb", ".rpm",
}

func isData(name string) bool {
	name = strings.ToLower(name)
	if i := strings.IndexAny(name, "?#"); i >= 0 {
		name = name[:i]
	}
	if strings.Contains(name, "/resolve/") {
		return true
	}
	for _, e := range dataExts {
		if strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

// fetch records a curl/wget download to a file (an output option, or
// standard output redirected to a file).
func (sc *shellScan) fetch(p string, args []arg, ln int, c *syntax.CallExpr) {
	f, ok := fetchArgs(p, args)
	if !ok {
		return
	}
	if f.stdout {
		out, redirected := sc.st.outputs[c]
		if !redirected {
			return // judged by pipe and execCheck
		}
		f.file = out
	}
	sc.record(&download{file: f.file, url: f.url, line: ln, data: isData(f.url) || isData(f.file), verified: immutableURL(f.url)})
}

// record adds a download, keyed by its path resolved against the current
// directory.
func (sc *shellScan) record(d *download) {
	if d.file != "" {
		d.key = sc.resolve(d.file)
		sc.forget(d.file)
	}
	if d.r == nil {
		d.r = sc.r
	}
	sc.st.downloads = append(sc.st.downloads, d)
}

// verify marks downloads as checked by a checksum or signature tool: with
// -c (a checksum list from a file or standard input) every download made
// so far, else the files it names.
func (sc *shellScan) verify(args []arg) {
	check := false
	var files []string
	for _, a := range args {
		switch {
		case a.s == "-c" || a.s == "--check" || a.s == "--verify" || a.s == "-V" || a.s == "verify-blob" || shortOpt(a.s, 'c'):
			check = true
		case !strings.HasPrefix(a.s, "-"):
			files = append(files, a.s)
		}
	}
	for _, d := range sc.st.downloads {
		if check {
			d.verified = true
			continue
		}
		for _, f := range files {
			if d.key != "" && d.key == sc.resolve(f) {
				d.verified = true
			}
		}
	}
}

// hfDownload checks huggingface-cli/hf download REPO for --revision.
func (sc *shellScan) hfDownload(args []arg, ln int) {
	if len(args) == 0 || args[0].s != "download" {
		return
	}
	repo, rev, revSet, dynRev := "", "", false, false
	localDir := ""
	var files []string
	for i := 1; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i].s, "=")
		switch {
		case name == "--revision":
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			rev, revSet, dynRev = val, true, args[i].dyn
		case strings.HasPrefix(name, "--"):
			if !hasVal && i+1 < len(args) && hfValueOpts[name] {
				i++
				val = args[i].s
			}
			if name == "--local-dir" {
				localDir = val
			}
		case repo == "":
			repo = args[i].s
		default:
			files = append(files, args[i].s)
		}
	}
	if repo == "" {
		return
	}
	// Files fetched into a local directory can be run later: track them.
	for _, f := range files {
		if localDir != "" && !strings.ContainsAny(f, "*?[") {
			sc.record(&download{file: path.Join(localDir, f), url: "the Hugging Face repository " + repo, line: ln, noData: true, verified: revSet && isCommit(rev)})
		}
	}
	if dynRev || revSet && isCommit(rev) {
		return
	}
	msg := fmt.Sprintf("download of %q takes the main branch, which the repository owner can change at any time; pin the commit: --revision <40-hex commit>", repo)
	if revSet {
		msg = fmt.Sprintf("download of %q uses --revision %q, a branch or tag that can move; pin the commit: --revision <40-hex commit>", repo, rev)
	}
	sc.r.add(ruleHFRevision, ln, repo, msg)
}

// cloudValueOpts are options of the cloud copy tools that take a value.
var cloudValueOpts = map[string]bool{
	"--profile": true, "--region": true, "--endpoint-url": true, "--exclude": true, "--include": true,
	"--bucket": true, "--key": true, "--version-id": true, "--range": true, "--sse-c": true, "--sse-c-key": true,
	"--request-payer": true, "--expected-bucket-owner": true, "--checksum-mode": true, "--part-number": true,
	"--config": true, "--transfers": true, "--checkers": true, "--log-level": true, "--project": true,
	"--billing-project": true, "--impersonate-service-account": true, "-h": true, "-o": true, "--log-file": true,
	"--include-pattern": true, "--exclude-pattern": true, "--from-to": true, "--block-size-mb": true, "--cap-mbps": true,
}

// cloudCopy records files fetched from object storage (aws s3 cp, aws
// s3api get-object, gsutil cp, gcloud storage cp, rclone copy/copyto,
// azcopy copy, s5cmd cp, mc cp): running one later without a checksum is
// download-exec, as for curl. They are not judged as data downloads: the
// bucket is usually the project's own.
func (sc *shellScan) cloudCopy(p string, args []arg, ln int) {
	var rest []arg
	switch {
	case p == "aws" && len(args) > 2 && args[0].s == "s3" && (args[1].s == "cp" || args[1].s == "mv"):
		rest = args[2:]
	case p == "aws" && len(args) > 2 && args[0].s == "s3api" && args[1].s == "get-object":
		var bucket, key string
		var pos []arg
		for i := 2; i < len(args); i++ {
			name, val, hasVal := strings.Cut(args[i].s, "=")
			if strings.HasPrefix(name, "--") {
				if cloudValueOpts[name] && !hasVal && i+1 < len(args) {
					i++
					val = args[i].s
				}
				switch name {
				case "--bucket":
					bucket = val
				case "--key":
					key = val
				}
				continue
			}
			pos = append(pos, args[i])
		}
		if len(pos) > 0 && !pos[len(pos)-1].dyn {
			file := pos[len(pos)-1].s
			if strings.HasSuffix(file, "/") || file == "." {
				file = path.Join(file, path.Base(key))
			}
			sc.record(&download{file: file, url: "s3://" + bucket + "/" + key, line: ln, noData: true})
		}
		return
	case p == "gsutil":
		args = skipOpts(args, "o", "h", "u")
		switch {
		case len(args) > 0 && (args[0].s == "cp" || args[0].s == "mv"):
			rest = args[1:]
		case len(args) > 0 && strings.HasPrefix(args[0].s, "gs://"):
			rest = args // gsutil gs://b/o DEST, as Scorecard reads it
		}
	case p == "gcloud" && len(args) > 2 && args[0].s == "storage" && (args[1].s == "cp" || args[1].s == "mv"):
		rest = args[2:]
	case p == "gcloud" && len(args) > 3 && args[0].s == "alpha" && args[1].s == "storage" && args[2].s == "cp":
		rest = args[3:]
	case (p == "rclone" || p == "azcopy" || p == "s5cmd" || p == "mc") && len(args) > 1:
		switch args[0].s {
		case "copy", "copyto", "cp", "move", "moveto", "mv", "sync":
			rest = args[1:]
		}
	}
	var pos []arg
	for i := 0; i < len(rest); i++ {
		name, _, hasVal := strings.Cut(rest[i].s, "=")
		if strings.HasPrefix(name, "-") {
			if cloudValueOpts[name] && !hasVal {
				i++
			}
			continue
		}
		pos = append(pos, rest[i])
	}
	if len(pos) < 2 {
		return
	}
	src, dst := pos[0], pos[len(pos)-1]
	if dst.dyn || !remoteObject(p, src.s) || remoteObject(p, dst.s) {
		return
	}
	file := dst.s
	if strings.HasSuffix(file, "/") || file == "." || p == "rclone" && rest != nil && args[0].s == "copy" {
		file = path.Join(file, path.Base(src.s))
	}
	sc.record(&download{file: file, url: src.s, line: ln, noData: true})
}

// remoteObject reports an object storage URL (s3://, gs://, https://,
// rclone's remote:path).
func remoteObject(p, s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	if p == "rclone" {
		r, _, ok := strings.Cut(s, ":")
		return ok && r != "" && !strings.ContainsAny(r, "/.")
	}
	return false
}

var hfValueOpts = map[string]bool{
	"--repo-type": true, "--include": true, "--exclude": true, "--cache-dir": true, "--local-dir": true,
	"--token": true, "--max-workers": true, "--local-dir-use-symlinks": true,
}

// git checks clone, checkout, switch, reset and fetch.
func (sc *shellScan) git(args []arg, ln int) {
	dir := ""
	for len(args) > 0 && strings.HasPrefix(args[0].s, "-") {
		switch args[0].s {
		case "-C":
			if len(args) > 1 {
				dir = args[1].s
				args = args[1:]
			}
		case "-c", "--git-dir", "--work-tree", "--namespace":
			if len(args) > 1 {
				args = args[1:]
			}
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return
	}
	sub, rest := args[0].s, args[1:]
	switch sub {
	case "clone":
		sc.gitClone(rest, ln)
	case "checkout", "switch", "reset":
		for _, a := range rest {
			if strings.HasPrefix(a.s, "-") {
				continue
			}
			if a.dyn || isCommit(a.s) || a.s == "FETCH_HEAD" && sc.st.fetchedCommit {
				sc.pinClone(dir)
			}
			break
		}
	case "fetch":
		for _, a := range rest {
			if isCommit(a.s) || a.dyn && !strings.HasPrefix(a.s, "-") {
				sc.st.fetchedCommit = true
			}
		}
	}
}

var cloneValueOpts = map[string]bool{
	"-b": true, "--branch": true, "-o": true, "--origin": true, "-u": true, "--upload-pack": true,
	"--reference": true, "--reference-if-able": true, "--separate-git-dir": true, "--depth": true,
	"--shallow-since": true, "--shallow-exclude": true, "-c": true, "--config": true, "--filter": true,
	"-j": true, "--jobs": true, "--template": true, "--bundle-uri": true, "--server-option": true, "--revision": true,
}

func (sc *shellScan) gitClone(args []arg, ln int) {
	var pos []arg
	ref, revision := "", false
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i].s, "=")
		if strings.HasPrefix(name, "-") {
			if cloneValueOpts[name] && !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			switch name {
			case "-b", "--branch":
				ref = val
			case "--revision":
				ref, revision = val, isCommit(val) || args[i].dyn
			}
			continue
		}
		pos = append(pos, args[i])
	}
	if len(pos) == 0 || pos[0].dyn && !strings.Contains(pos[0].s, "/") {
		return
	}
	u := pos[0].s
	dir := strings.TrimSuffix(path.Base(strings.TrimSuffix(u, "/")), ".git")
	if len(pos) > 1 {
		dir = pos[1].s
	}
	sc.st.clones = append(sc.st.clones, &clone{dir: dir, url: u, ref: ref, line: ln, r: sc.r, pinned: revision || isCommit(ref)})
}

// pinClone marks the clone in dir (or the latest clone) as checked out at a
// commit.
func (sc *shellScan) pinClone(dir string) {
	for i := len(sc.st.clones) - 1; i >= 0; i-- {
		c := sc.st.clones[i]
		if dir == "" || path.Clean(c.dir) == path.Clean(dir) || path.Base(c.dir) == path.Base(dir) {
			c.pinned = true
			return
		}
	}
}

// finish reports what only the end of the script can tell: clones never
// pinned, data never verified.
func (st *shellState) finish() {
	for _, c := range st.clones {
		if c.pinned {
			continue
		}
		what := "the default branch"
		if c.ref != "" {
			what = fmt.Sprintf("%q (a branch or tag, which can move)", c.ref)
		}
		c.r.add(ruleGitCloneUnpinned, c.line, c.url, fmt.Sprintf("git clone %s checks out %s and no checkout of a full commit follows; pin it: git -C %s checkout <40-hex commit> (or git clone --revision=<commit>)", c.url, what, c.dir))
	}
	for _, d := range st.downloads {
		if !d.data || d.noData || d.verified || d.executed {
			continue
		}
		d.r.add(ruleDownloadNoChecksum, d.line, d.url, fmt.Sprintf("%s is downloaded to %s and never verified: a replaced checkpoint, dataset or archive goes unnoticed (pickled weights run code on load); verify it: echo '<sha256>  %s' | sha256sum -c -", d.url, d.file, d.file))
	}
}
