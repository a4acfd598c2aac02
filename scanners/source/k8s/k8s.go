//go:build !mlwarden_sbatch

// Package k8s is the source of k8s:[CONTEXT][/NAMESPACE] targets: what a
// Kubernetes cluster holds now, read through its API with client-go.
//
// Every object it lists is serialised as YAML (managedFields, status and
// kubectl's last-applied copy stripped) and handed to the sink as the
// artifact NAMESPACE/KIND/NAME.yaml (KIND/NAME.yaml when cluster-scoped), so
// the misconfig check judges it with the same code as a manifest file: a
// live scan and a scan of the same objects as files give the same rule IDs
// and counts. The images the workloads run are collected while it walks —
// by digest where a pod's status has one (imageID), else by reference —
// and returned by More as one image source each, which the dispatcher
// walks after it as targets of their own (each once, whatever number of
// workloads runs it; a note names them).
//
// It never writes to the cluster: it only gets and lists, page by page
// (limit/continue), keeping per object only what the image attachment
// needs. A list that RBAC forbids is a note and an error naming the kind
// (exit 2), never a silent pass.
package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mlwarden/mlwarden/scanners"
	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// Source is one k8s: target.
type Source struct {
	o         Options
	context   string // the kubeconfig context in use ("in-cluster" for the service account)
	namespace string // "" for every namespace
	name      string
	client    kubernetes.Interface
	dynamic   dynamic.Interface

	mu     sync.Mutex
	notes  []string
	images *images
	opened []scanners.Source // image sources handed out by More
}

// Open returns the source of k8s:REST (REST is [CONTEXT][/NAMESPACE]).
// A context name that itself holds a slash is taken whole when the
// kubeconfig has a context of that name.
func Open(ctx context.Context, ref string, o Options) (*Source, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("k8s:%s: read kubeconfig: %w", ref, err)
	}
	kctx, ns := ref, ""
	if _, ok := raw.Contexts[ref]; !ok {
		if i := strings.LastIndexByte(ref, '/'); i >= 0 {
			kctx, ns = ref[:i], ref[i+1:]
		}
	}
	if ns != "" && !validName(ns) {
		return nil, fmt.Errorf("k8s:%s: %q is not a namespace name", ref, ns)
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kctx}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("k8s:%s: %w", ref, err)
	}
	used := kctx
	if used == "" {
		used = raw.CurrentContext
	}
	if used == "" {
		used = "in-cluster"
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "mlwarden"
	// The scan reads many pages; the client's default of 5 requests a
	// second would make a large cluster's listing take minutes.
	cfg.QPS, cfg.Burst = 50, 100
	if o.WrapTransport != nil {
		cfg.Wrap(o.WrapTransport)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("k8s:%s: %w", ref, err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("k8s:%s: %w", ref, err)
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	tname := Scheme + ":" + used
	if ns != "" {
		tname += "/" + ns
	}
	return &Source{o: o, context: used, namespace: ns, name: tname, client: cs, dynamic: dc, images: newImages()}, nil
}

// validName reports whether s is a DNS-1123 label, as namespace names are.
func validName(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Target implements scanners.Source.
func (s *Source) Target() scanners.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	return scanners.Target{Name: s.name, Kind: scanners.KindCluster, Notes: slices.Clone(s.notes)}
}

func (s *Source) note(format string, args ...any) {
	s.mu.Lock()
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// Walk implements scanners.Source: it lists every kind in turn and hands
// each object to sink as it arrives.
func (s *Source) Walk(ctx context.Context, sink scanners.Sink) error {
	w := &walk{s: s, sink: sink, owners: map[string]string{}}
	for _, k := range kinds {
		if k.cluster && s.namespace != "" && !k.inNamespaceScan {
			continue
		}
		if err := k.list(ctx, w); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.failed(k, err)
		}
	}
	if s.namespace != "" {
		s.note("namespace %s only: ClusterRoleBindings and the GPU Operator's ClusterPolicy were not read", s.namespace)
	}
	return nil
}

// failed records a list that did not succeed: a forbidden one (RBAC) and
// any other error are errors of the target naming the kind (the scan is
// not complete); a kind the server does not serve is a note.
func (w *walk) failed(k kind, err error) {
	s := w.s
	switch {
	case apierrors.IsNotFound(err) && k.optional != "":
		s.note("%s: %s", k.name, k.optional)
	case apierrors.IsForbidden(err):
		s.note("%s not read: forbidden (the service account or user may not list them; see the read-only ClusterRole in deploy/helm/mlwarden)", k.name)
		w.sink.Error(scanners.Error{Target: s.name, Path: k.name, Message: fmt.Errorf("list %s: %w: %v", k.name, scanners.ErrIncomplete, err).Error()})
	default:
		w.sink.Error(scanners.Error{Target: s.name, Path: k.name, Message: fmt.Errorf("list %s: %w: %v", k.name, scanners.ErrIncomplete, err).Error()})
	}
}

// More implements scanners.Fanout: a source for each distinct image the
// walked workloads run, each with a note naming them.
func (s *Source) More() []scanners.Source {
	if s.o.NoImages {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []scanners.Source
	for _, u := range s.images.list() {
		src, err := image.Open(context.Background(), image.SchemeRegistry, u.ref, s.o.Image)
		if err != nil {
			src = failed{t: scanners.Target{Name: u.ref, Kind: scanners.KindImage}, err: err}
		}
		src = &used{Source: src, note: u.note(s.name)}
		s.opened = append(s.opened, src)
		out = append(out, src)
	}
	return out
}

// Images returns the distinct images found by the walk, each with the
// workloads that run it (for tests and the library's users).
func (s *Source) Images() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for _, u := range s.images.list() {
		out[u.ref] = u.workloads
	}
	return out
}

// Close closes the image sources More handed out.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, src := range s.opened {
		if c, ok := src.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	s.opened = nil
	return errors.Join(errs...)
}

// used is an image source whose target names the workloads that run it.
type used struct {
	scanners.Source
	note string
}

func (u *used) Target() scanners.Target {
	t := u.Source.Target()
	t.Notes = append(t.Notes, u.note)
	return t
}

func (u *used) Close() error {
	if c, ok := u.Source.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// failed is an image that could not be opened: its walk is the error.
type failed struct {
	t   scanners.Target
	err error
}

func (f failed) Target() scanners.Target                   { return f.t }
func (f failed) Walk(context.Context, scanners.Sink) error { return f.err }

// imageKey is the reference an image is scanned by: name@digest when the
// pod status reports a repository digest (containerd's imageID, Docker's
// docker-pullable://), else the reference normalised (nginx:1 and
// docker.io/library/nginx:1 are one image). A bare sha256: image ID is not
// used: under Docker it is the config's digest, not the manifest's.
func imageKey(ref, imageID string) string {
	id := imageID
	for _, p := range []string{"docker-pullable://", "docker://", "containerd://"} {
		id = strings.TrimPrefix(id, p)
	}
	if i := strings.Index(id, "@sha256:"); i > 0 {
		if d, err := name.NewDigest(id); err == nil {
			return d.Name()
		}
	}
	if r, err := name.ParseReference(ref); err == nil {
		return r.Name()
	}
	return ref
}
