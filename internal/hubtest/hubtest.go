// Package hubtest is a Hugging Face Hub on loopback for tests and
// benchmarks: it speaks the documented endpoints the hf source uses —
// GET /api/{type}s/{id}/revision/{rev} (commit, siblings),
// GET /api/{type}s/{id}/tree/{rev}?recursive=true (sizes, git and LFS
// digests, pages linked by a Link header), and GET|HEAD
// /{id}/resolve/{rev}/{path} with Range, X-Repo-Commit, ETag and, for
// LFS files, a 302 to a second host (the file host, as the Hub's CDN)
// with X-Linked-Etag and X-Linked-Size — with the Hub's error answers
// (401/403/404 with X-Error-Code, 429 with RateLimit and Retry-After) and
// faults to inject. Repositories are made from a directory, or from a real
// git repository with git-lfs (FromGit). It counts the requests and bytes
// it serves.
//
// The package is internal: it is test support for this module only.
package hubtest

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// File is one file of a commit.
type File struct {
	Path string
	Size int64
	// OID is the git blob id; LFS the sha256 of a file stored in Git LFS
	// ("" for a plain git file).
	OID string
	LFS string
	// Open returns the content.
	Open func() (io.ReaderAt, error)
}

// Repo is a repository: commits by id and refs naming them.
type Repo struct {
	// Type is "model", "dataset" or "space"; ID is ORG/NAME.
	Type string
	ID   string
	// Private repositories answer only a token the server knows (Tokens);
	// Gated ones only a token allowed for them.
	Private, Gated bool
	// GateMode is what the revision answer says of a gated repository:
	// "auto" (the default) or "manual" (the authors approve each request).
	GateMode string
	// CardData is the revision answer's cardData: the README's metadata
	// as the Hub read it (license, license_name, extra_gated_fields...).
	CardData map[string]any
	// Refs maps branches and tags to commits; Tags lists which are tags.
	Refs    map[string]string
	Tags    []string
	Commits map[string][]File
}

// Fault is what goes wrong for one file (by path) or for the API.
type Fault int

// Faults.
const (
	// FaultNone serves the file as it is.
	FaultNone Fault = iota
	// FaultChangedSize serves the file as if it had grown since the tree
	// was listed (Content-Range and X-Linked-Size disagree with the tree).
	FaultChangedSize
	// FaultChangedBytes serves other bytes of the same size.
	FaultChangedBytes
	// FaultInsecureRedirect redirects the file to a plain-HTTP host that is
	// not loopback.
	FaultInsecureRedirect
	// FaultNoRange ignores Range and serves the whole file.
	FaultNoRange
)

// Stats counts what the server served.
type Stats struct {
	Requests      int64 // every request, API and files
	RangeRequests int64 // requests with a Range header
	APIBytes      int64 // body bytes of /api/ answers
	FileBytes     int64 // body bytes of file content (resolve and file host)
	Redirects     int64
}

// Server is a Hub on loopback: API is the Hub, Files the file host its
// LFS redirects point to.
type Server struct {
	API   *httptest.Server
	Files *httptest.Server
	// PageSize is how many tree entries one page holds (default 1000).
	PageSize int
	// Tree, when set, rewrites every tree listing (sorted by path, before
	// it is paged): tests of hostile listings reorder it, or add entries
	// no file stands behind.
	Tree func([]TreeEntry) []TreeEntry

	mu        sync.Mutex
	repos     map[string]*Repo           // type/id
	tokens    map[string]map[string]bool // token → repos (type/id) it may read; nil map: all public and private
	faults    map[string]Fault           // path → fault
	rateLimit int                        // answers of 429 still to give
	retryIn   int                        // the RateLimit t= value of a 429
	sigs      map[string]string          // signature → sha256 of the LFS object
	blobs     map[string]File            // sha256 → a file with that content
	served    map[string][][2]int64      // path → byte ranges served [start, end)

	requests, ranges, apiBytes, fileBytes, redirects atomic.Int64
}

// New starts a Hub and its file host for the life of the test.
func New(t interface {
	Helper()
	Cleanup(func())
}) *Server {
	t.Helper()
	s := Start()
	t.Cleanup(s.Close)
	return s
}

// Start starts a Hub and its file host; Close stops them.
func Start() *Server {
	s := &Server{PageSize: 1000, repos: map[string]*Repo{}, tokens: map[string]map[string]bool{}, faults: map[string]Fault{}, sigs: map[string]string{}, blobs: map[string]File{}, served: map[string][][2]int64{}}
	s.API = httptest.NewServer(http.HandlerFunc(s.serveHub))
	s.Files = httptest.NewServer(http.HandlerFunc(s.serveFiles))
	return s
}

// Close stops both servers.
func (s *Server) Close() {
	s.API.Close()
	s.Files.Close()
}

// Endpoint is the Hub's URL, for HF_ENDPOINT.
func (s *Server) Endpoint() string { return s.API.URL }

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), RangeRequests: s.ranges.Load(), APIBytes: s.apiBytes.Load(), FileBytes: s.fileBytes.Load(), Redirects: s.redirects.Load()}
}

// ResetStats zeroes the counters and forgets the ranges served.
func (s *Server) ResetStats() {
	for _, c := range []*atomic.Int64{&s.requests, &s.ranges, &s.apiBytes, &s.fileBytes, &s.redirects} {
		c.Store(0)
	}
	s.mu.Lock()
	s.served = map[string][][2]int64{}
	s.mu.Unlock()
}

// Add serves r.
func (s *Server) Add(r *Repo) {
	if r.Type == "" {
		r.Type = "model"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[r.Type+"/"+r.ID] = r
	for _, fs := range r.Commits {
		for _, f := range fs {
			if f.LFS != "" {
				s.blobs[f.LFS] = f
			}
		}
	}
}

// AddFiles serves files as the one commit of model repository id, on the
// branch main, and returns the commit id (derived from the listing).
func (s *Server) AddFiles(id string, files []File) string {
	h := sha1.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s %s %s\n", f.Path, f.OID, f.LFS)
	}
	commit := hex.EncodeToString(h.Sum(nil))
	s.Add(&Repo{ID: id, Refs: map[string]string{"main": commit}, Commits: map[string][]File{commit: files}})
	return commit
}

// Token makes a token (a fresh random value, so that no test source holds
// one) that reads the given repositories ("TYPE/ID"; none: every public
// and private one, but no gated one).
func (s *Server) Token(repos ...string) string {
	var b [17]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	tok := "hf_test" + hex.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]bool{}
	for _, r := range repos {
		m[r] = true
	}
	if len(repos) == 0 {
		m = nil
	}
	s.tokens[tok] = m
	return tok
}

// SetFault makes requests for the file at path (in any repository) fail so.
func (s *Server) SetFault(path string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[path] = f
}

// RateLimit answers the next n requests with 429, asking to wait retryIn
// seconds (RateLimit: "api";r=0;t=retryIn and Retry-After).
func (s *Server) RateLimit(n, retryIn int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimit, s.retryIn = n, retryIn
}

// counter counts the bytes of a response body.
type counter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c counter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// segments splits the escaped path into unescaped segments.
func segments(r *http.Request) []string {
	var out []string
	for _, p := range strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/") {
		u, err := url.PathUnescape(p)
		if err != nil {
			u = p
		}
		out = append(out, u)
	}
	return out
}

// access decides whether the request may read repo; it writes the Hub's
// answer and returns false when not.
func (s *Server) access(w http.ResponseWriter, r *http.Request, typ, id string) (*Repo, bool) {
	s.mu.Lock()
	repo := s.repos[typ+"/"+id]
	tok, hasTok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	allowed, known := s.tokens[tok]
	s.mu.Unlock()
	if hasTok && !known {
		hubError(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
		return nil, false
	}
	notFound := func() {
		if hasTok {
			hubError(w, http.StatusNotFound, "RepoNotFound", "Repository Not Found for url: "+r.URL.Path+".")
		} else {
			hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url: "+r.URL.Path+". Please make sure you specified the correct `repo_id` and `repo_type`. If you are trying to access a private or gated repo, make sure you are authenticated.")
		}
	}
	switch {
	case repo == nil:
		notFound()
		return nil, false
	case repo.Gated && !hasTok:
		hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
		return nil, false
	case repo.Gated && !allowed[typ+"/"+id]:
		hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted and you are not in the authorized list. Visit https://huggingface.co/"+id+" to ask for access.")
		return nil, false
	case repo.Private && !hasTok:
		notFound()
		return nil, false
	case repo.Private && allowed != nil && !allowed[typ+"/"+id]:
		hubError(w, http.StatusForbidden, "", "Your token does not have access to "+id+".")
		return nil, false
	}
	return repo, true
}

// rateLimited answers 429 while the rate limit lasts.
func (s *Server) rateLimited(w http.ResponseWriter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rateLimit <= 0 {
		return false
	}
	s.rateLimit--
	w.Header().Set("RateLimit", fmt.Sprintf(`"api";r=0;t=%d`, s.retryIn))
	w.Header().Set("RateLimit-Policy", `"fixed window";"api";q=500;w=300`)
	w.Header().Set("Retry-After", strconv.Itoa(s.retryIn))
	hubError(w, http.StatusTooManyRequests, "", "You have been rate-limited; you can retry this action in about 5 minutes.")
	return true
}

func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.Header.Get("Range") != "" {
		s.ranges.Add(1)
	}
	if s.rateLimited(w) {
		return
	}
	seg := segments(r)
	if len(seg) > 0 && seg[0] == "api" {
		s.serveAPI(counter{w, &s.apiBytes}, r, seg[1:])
		return
	}
	// /[datasets/|spaces/]ID/resolve/REV/PATH
	typ := "model"
	if len(seg) > 0 && (seg[0] == "datasets" || seg[0] == "spaces") {
		typ, seg = strings.TrimSuffix(seg[0], "s"), seg[1:]
	}
	i := slices.Index(seg, "resolve")
	if i < 1 || i > 2 || len(seg) < i+3 {
		http.NotFound(w, r)
		return
	}
	id, rev, p := strings.Join(seg[:i], "/"), seg[i+1], strings.Join(seg[i+2:], "/")
	repo, ok := s.access(w, r, typ, id)
	if !ok {
		return
	}
	commit, files, ok := s.commit(repo, rev)
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	var f *File
	for i := range files {
		if files[i].Path == p {
			f = &files[i]
		}
	}
	if f == nil {
		w.Header().Set("X-Repo-Commit", commit)
		hubError(w, http.StatusNotFound, "EntryNotFound", "Entry not found")
		return
	}
	s.mu.Lock()
	fault := s.faults[p]
	s.mu.Unlock()
	w.Header().Set("X-Repo-Commit", commit)
	size := f.Size
	if fault == FaultChangedSize {
		size++
	}
	if f.LFS != "" {
		w.Header().Set("X-Linked-Etag", `"`+f.LFS+`"`)
		w.Header().Set("X-Linked-Size", strconv.FormatInt(size, 10))
		w.Header().Set("ETag", `"`+f.LFS+`"`)
		var sig [8]byte
		rand.Read(sig[:])
		sg := hex.EncodeToString(sig[:])
		s.mu.Lock()
		s.sigs[sg] = f.LFS
		s.mu.Unlock()
		loc := s.Files.URL + "/repos/" + f.LFS[:2] + "/" + f.LFS + "?X-Amz-Expires=3600&X-Amz-Signature=" + sg
		if fault == FaultInsecureRedirect {
			loc = "http://cdn.example.invalid/repos/" + f.LFS + "?X-Amz-Signature=" + sg
		}
		s.redirects.Add(1)
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+f.OID+`"`)
	s.serveContent(counter{w, &s.fileBytes}, r, *f, fault)
}

// commit resolves rev (a ref or a commit) of repo.
func (s *Server) commit(repo *Repo, rev string) (string, []File, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := rev
	if ref, ok := repo.Refs[rev]; ok {
		c = ref
	}
	files, ok := repo.Commits[c]
	return c, files, ok
}

func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.Header.Get("Range") != "" {
		s.ranges.Add(1)
	}
	if r.Header.Get("Authorization") != "" {
		// The Hub's CDN URLs are signed: a client must not send the token.
		http.Error(w, "Authorization sent to the file host", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	oid, ok := s.sigs[r.URL.Query().Get("X-Amz-Signature")]
	f, have := s.blobs[oid]
	s.mu.Unlock()
	if !ok || !have || path.Base(r.URL.Path) != oid {
		http.Error(w, "AccessDenied: bad signature", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	fault := s.faults[f.Path]
	s.mu.Unlock()
	w.Header().Set("ETag", `"cdn-`+oid[:8]+`"`)
	s.serveContent(counter{w, &s.fileBytes}, r, f, fault)
}

// Served returns the byte ranges [start, end) of the file at path that
// were served, in order (a request without Range is the whole file).
func (s *Server) Served(path string) [][2]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.served[path])
}

// record notes the range a content request asks for.
func (s *Server) record(r *http.Request, f File) {
	start, end := int64(0), f.Size
	if rg, ok := strings.CutPrefix(r.Header.Get("Range"), "bytes="); ok {
		a, b, _ := strings.Cut(rg, "-")
		if x, err := strconv.ParseInt(a, 10, 64); err == nil {
			start = x
		}
		if y, err := strconv.ParseInt(b, 10, 64); err == nil {
			end = min(y+1, f.Size)
		}
	}
	s.mu.Lock()
	s.served[f.Path] = append(s.served[f.Path], [2]int64{start, end})
	s.mu.Unlock()
}

// serveContent serves f with Range support (http.ServeContent).
func (s *Server) serveContent(w http.ResponseWriter, r *http.Request, f File, fault Fault) {
	if r.Method == http.MethodGet {
		s.record(r, f)
	}
	ra, err := f.Open()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if c, ok := ra.(io.Closer); ok {
		defer c.Close()
	}
	var rs io.ReadSeeker = io.NewSectionReader(ra, 0, f.Size)
	switch fault {
	case FaultChangedSize:
		rs = io.NewSectionReader(grown{ra, f.Size}, 0, f.Size+1)
	case FaultChangedBytes:
		rs = io.NewSectionReader(flipped{ra}, 0, f.Size)
	case FaultNoRange:
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "", time.Time{}, rs)
}

// grown is the content with one more byte at its end.
type grown struct {
	r    io.ReaderAt
	size int64
}

func (g grown) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if off < g.size {
		m, err := g.r.ReadAt(p[:min(int64(len(p)), g.size-off)], off)
		if err != nil && err != io.EOF {
			return m, err
		}
		n = m
	}
	if int64(n) < int64(len(p)) && off+int64(n) == g.size {
		p[n] = '\n'
		n++
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// flipped inverts every byte: the same size, other content.
type flipped struct{ r io.ReaderAt }

func (f flipped) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.r.ReadAt(p, off)
	for i := range p[:n] {
		p[i] ^= 0xff
	}
	return n, err
}

// TreeEntry is one entry of a tree listing, as the Hub writes it.
type TreeEntry struct {
	Type string   `json:"type"` // "file" or "directory"
	OID  string   `json:"oid"`
	Size int64    `json:"size"`
	Path string   `json:"path"`
	LFS  *TreeLFS `json:"lfs,omitempty"`
}

// TreeLFS is a tree entry's Git LFS object.
type TreeLFS struct {
	OID         string `json:"oid"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, seg []string) {
	// {models|datasets|spaces}/ID.../{revision|tree}/REV[/PATH]
	if len(seg) < 4 {
		http.NotFound(w, r)
		return
	}
	typ := strings.TrimSuffix(seg[0], "s")
	seg = seg[1:]
	op := slices.IndexFunc(seg, func(x string) bool { return x == "revision" || x == "tree" })
	if op < 1 || op > 2 || op+1 >= len(seg) {
		http.NotFound(w, r)
		return
	}
	id, rev := strings.Join(seg[:op], "/"), seg[op+1]
	repo, ok := s.access(w, r, typ, id)
	if !ok {
		return
	}
	commit, files, ok := s.commit(repo, rev)
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if seg[op] == "revision" {
		sib := []map[string]any{}
		for _, f := range files {
			sib = append(sib, map[string]any{"rfilename": f.Path})
		}
		var gated any = false
		if repo.Gated {
			gated = cmp.Or(repo.GateMode, "auto")
		}
		info := map[string]any{"id": id, "sha": commit, "siblings": sib, "private": repo.Private, "gated": gated, "disabled": false}
		if repo.CardData != nil {
			info["cardData"] = repo.CardData
		}
		json.NewEncoder(w).Encode(info)
		return
	}
	type lfs = TreeLFS
	type entry = TreeEntry
	var all []entry
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				all = append(all, entry{Type: "directory", OID: "0000000000000000000000000000000000000000", Path: d})
			}
		}
		e := entry{Type: "file", OID: f.OID, Size: f.Size, Path: f.Path}
		if f.LFS != "" {
			e.LFS = &lfs{OID: f.LFS, Size: f.Size, PointerSize: 134}
		}
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.Path, b.Path) })
	if s.Tree != nil {
		all = s.Tree(all)
	}
	cursor, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	size := s.PageSize
	if size <= 0 {
		size = 1000
	}
	end := min(cursor+size, len(all))
	if cursor > len(all) {
		cursor = len(all)
	}
	if end < len(all) {
		q := r.URL.Query()
		q.Set("cursor", strconv.Itoa(end))
		next := *r.URL
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.API.URL, next.RequestURI()))
	}
	json.NewEncoder(w).Encode(all[cursor:end])
}

// lfsExts are stored in Git LFS by FromDir (as the Hub's default
// .gitattributes does), with every file of 10 MiB or more.
var lfsExts = []string{".bin", ".pt", ".pth", ".ckpt", ".safetensors", ".gguf", ".onnx", ".h5", ".keras", ".pkl", ".pickle", ".joblib", ".npy", ".npz", ".msgpack", ".tar", ".gz", ".zip", ".7z", ".parquet", ".model", ".tflite", ".pb"}

// FromDir lists the files under dir (symlinks are followed; .git is
// skipped) with their git blob ids and, for the ones Git LFS would hold,
// their sha256.
func FromDir(dir string) ([]File, error) {
	var out []File
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, err := fileOf(filepath.ToSlash(rel), p, fi.Size(), slices.Contains(lfsExts, strings.ToLower(filepath.Ext(p))) || fi.Size() >= 10<<20)
		if err != nil {
			return err
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// fileOf hashes the file at p.
func fileOf(rel, p string, size int64, lfs bool) (File, error) {
	fh, err := os.Open(p)
	if err != nil {
		return File{}, err
	}
	defer fh.Close()
	g := sha1.New()
	fmt.Fprintf(g, "blob %d\x00", size)
	h := sha256.New()
	w := io.Writer(g)
	if lfs {
		w = io.MultiWriter(g, h)
	}
	if _, err := io.Copy(w, fh); err != nil {
		return File{}, err
	}
	f := File{Path: rel, Size: size, OID: hex.EncodeToString(g.Sum(nil)), Open: func() (io.ReaderAt, error) { return os.Open(p) }}
	if lfs {
		f.LFS = hex.EncodeToString(h.Sum(nil))
	}
	return f, nil
}

// Bytes is a file held in memory.
func Bytes(p string, data []byte, lfs bool) File {
	g := sha1.New()
	fmt.Fprintf(g, "blob %d\x00", len(data))
	g.Write(data)
	f := File{Path: p, Size: int64(len(data)), OID: hex.EncodeToString(g.Sum(nil)), Open: func() (io.ReaderAt, error) { return bytes.NewReader(data), nil }}
	if lfs {
		sum := sha256.Sum256(data)
		f.LFS = hex.EncodeToString(sum[:])
	}
	return f
}
