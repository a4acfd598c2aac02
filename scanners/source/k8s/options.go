package k8s

import (
	"net/http"

	"github.com/mlwarden/mlwarden/scanners/source/image"
)

// Scheme is the target prefix: k8s:[CONTEXT][/NAMESPACE].
const Scheme = "k8s"

// DefaultPageSize is how many objects one list request asks for.
const DefaultPageSize = 500

// Options configures k8s: targets.
type Options struct {
	// Kubeconfig is the kubeconfig file (--kubeconfig); empty: $KUBECONFIG,
	// then ~/.kube/config, then the pod's service account (in-cluster).
	Kubeconfig string
	// PageSize is the limit of one list request (default DefaultPageSize).
	PageSize int64
	// Image configures the sources of the images the cluster runs.
	Image image.Options
	// NoImages lists and judges the objects only: the images are not
	// scanned.
	NoImages bool
	// WrapTransport, when set, wraps the API client's transport (a test
	// counting requests).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}
