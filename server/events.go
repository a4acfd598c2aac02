//go:build !mlwarden_sbatch

package server

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// EventsMediaType is the media type of CNCF distribution notifications.
const EventsMediaType = "application/vnd.docker.distribution.events.v1+json"

// maxEventsBytes bounds one notification envelope (the registry batches at
// most a few events).
const maxEventsBytes = 1 << 20

// registryEnvelope is the body the registry POSTs: the fields mlwarden reads
// from distribution's notifications.Envelope (documented in its
// notifications.md; the registry module is not imported for this).
type registryEnvelope struct {
	Events []registryEvent `json:"events"`
}

type registryEvent struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	Target struct {
		MediaType  string `json:"mediaType"`
		Digest     string `json:"digest"`
		Repository string `json:"repository"`
		URL        string `json:"url"`
		Tag        string `json:"tag"`
	} `json:"target"`
	Request struct {
		Host string `json:"host"`
	} `json:"request"`
}

// isManifest reports whether a pushed target is an image manifest or index
// (not a layer blob).
func isManifest(mt string) bool {
	switch types.MediaType(mt) {
	case types.OCIManifestSchema1, types.DockerManifestSchema2,
		types.OCIImageIndex, types.DockerManifestList:
		return true
	}
	return false
}

// authorized compares the request's bearer token (or bare Authorization
// value) with want in constant time.
func authorized(r *http.Request, want string) bool {
	if want == "" {
		return false
	}
	got := r.Header.Get("Authorization")
	if b, ok := strings.CutPrefix(got, "Bearer "); ok {
		got = b
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// serveEvents takes a registry's notifications and queues a scan of every
// pushed manifest. It answers at once: a slow endpoint blocks the registry's
// notification queue. When the scan queue is full the event is dropped (and
// counted): admission scans the image inline when it is used, so a 5xx that
// makes the registry resend would only slow the registry down.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	if s.eventsToken == "" {
		http.Error(w, "registry events are disabled: set events.token in the config", http.StatusForbidden)
		return
	}
	if !authorized(r, s.eventsToken) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mlwarden"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != EventsMediaType && mt != "application/json" {
			http.Error(w, "unsupported content type "+mt, http.StatusUnsupportedMediaType)
			return
		}
	}
	var env registryEnvelope
	if err := json.NewDecoder(io.LimitReader(r.Body, maxEventsBytes)).Decode(&env); err != nil {
		http.Error(w, "decode events: "+err.Error(), http.StatusBadRequest)
		return
	}
	queued := 0
	for _, ev := range env.Events {
		if ev.Action != "push" || !isManifest(ev.Target.MediaType) || ev.Target.Digest == "" || isArtifactTag(ev.Target.Tag) {
			continue
		}
		ref, err := s.eventRef(ev)
		if err != nil {
			s.log.Warn("registry event", "id", ev.ID, "err", err)
			continue
		}
		if _, err := s.scans.enqueue(ref, nil, "events"); err != nil {
			s.log.Warn("registry event dropped", "image", ref.String(), "err", err)
			continue
		}
		queued++
		s.log.Info("registry push queued", "image", ref.String(), "tag", ev.Target.Tag)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "{\"queued\":%d}\n", queued)
}

// eventRef turns a push event into repository@digest on the registry that
// sent it.
func (s *Server) eventRef(ev registryEvent) (name.Digest, error) {
	host, insecure := ev.Request.Host, false
	if u, err := url.Parse(ev.Target.URL); err == nil && u.Host != "" {
		host, insecure = u.Host, u.Scheme == "http"
	}
	if s.cfg.Events.Registry != "" {
		host = s.cfg.Events.Registry
	}
	if host == "" {
		return name.Digest{}, fmt.Errorf("event for %s names no registry", ev.Target.Repository)
	}
	d, err := s.requestRef(host+"/"+ev.Target.Repository+"@"+ev.Target.Digest, insecure)
	if err != nil {
		return name.Digest{}, fmt.Errorf("event reference: %w", err)
	}
	return d, nil
}
