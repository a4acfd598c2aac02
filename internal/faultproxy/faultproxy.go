// Package faultproxy is a loopback HTTP proxy for tests: it stands in front
// of a real registry (internal/registrytest) and injects the faults a
// registry shows in the wild — a response that stalls mid-body, a body
// dripped a byte at a time, a request never answered, a token endpoint that
// hangs — so that tests can check that every wait is bounded.
package faultproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Kind is what a fault does to a matching request.
type Kind int

// Kinds of faults.
const (
	// Hang never answers: no status line, no headers, until the client
	// gives up or the proxy closes.
	Hang Kind = iota + 1
	// Stall sends the headers and the first After bytes of the body, then
	// nothing more, keeping the connection open.
	Stall
	// Drip sends the body one byte every Interval.
	Drip
	// Status answers with Code and no body.
	Status
)

// Fault applies to the requests whose path matches Path (every request
// when nil) and, when Method is set, whose method is Method.
type Fault struct {
	Kind     Kind
	Path     *regexp.Regexp
	Method   string
	After    int64         // Stall: body bytes sent first
	Interval time.Duration // Drip: between bytes (default 1s)
	Code     int           // Status
	// Times limits the fault to the first Times matching requests (0:
	// every one).
	Times int
}

// Proxy forwards to its upstream, applying the faults set.
type Proxy struct {
	// Host is the proxy's host:port on 127.0.0.1.
	Host     string
	upstream string
	srv      *httptest.Server
	client   *http.Client
	done     chan struct{}

	mu       sync.Mutex
	faults   []*fault
	token    bool // challenge for a bearer token from /token
	requests []string
	wg       sync.WaitGroup
}

type fault struct {
	Fault
	hits int
}

// New starts a proxy on 127.0.0.1 in front of upstream (host:port, plain
// HTTP). Close stops it; handlers still holding a connection return.
func New(upstream string) *Proxy {
	p := &Proxy{upstream: upstream, done: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{}, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.Host = strings.TrimPrefix(p.srv.URL, "http://")
	return p
}

// Close stops the proxy and releases every held request.
func (p *Proxy) Close() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.srv.CloseClientConnections()
	p.srv.Close()
	p.wg.Wait()
}

// Set replaces the faults.
func (p *Proxy) Set(faults ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = p.faults[:0]
	for _, f := range faults {
		if f.Interval <= 0 {
			f.Interval = time.Second
		}
		p.faults = append(p.faults, &fault{Fault: f})
	}
}

// RequireToken makes the proxy ask for a bearer token, as registries with
// token auth do: /v2/ requests without one get 401 with a challenge naming
// the proxy's own /token endpoint, which hands one out (unless a fault
// matches /token).
func (p *Proxy) RequireToken(on bool) {
	p.mu.Lock()
	p.token = on
	p.mu.Unlock()
}

// Requests lists "METHOD PATH" of every request seen, in order.
func (p *Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

const token = "faultproxy-token"

func (p *Proxy) match(r *http.Request) *fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, r.Method+" "+r.URL.Path)
	for _, f := range p.faults {
		if f.Path != nil && !f.Path.MatchString(r.URL.Path) || f.Method != "" && f.Method != r.Method {
			continue
		}
		if f.Times > 0 && f.hits >= f.Times {
			continue
		}
		f.hits++
		return f
	}
	return nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.wg.Add(1)
	defer p.wg.Done()
	f := p.match(r)
	if f != nil && f.Kind == Hang {
		p.hold(r.Context())
		return
	}
	if f != nil && f.Kind == Status {
		w.WriteHeader(f.Code)
		return
	}
	p.mu.Lock()
	needToken := p.token
	p.mu.Unlock()
	if r.URL.Path == "/token" {
		w.Header().Set("Content-Type", "application/json")
		p.body(w, r, f, strings.NewReader(fmt.Sprintf(`{"token":%q,"access_token":%q,"expires_in":300}`, token, token)))
		return
	}
	if needToken && r.Header.Get("Authorization") != "Bearer "+token {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="faultproxy"`, p.Host))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+p.upstream+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.ContentLength = r.ContentLength
	for k, vs := range r.Header {
		if k == "Authorization" {
			continue
		}
		req.Header[k] = vs
	}
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k == "Location" {
			vs = []string{strings.ReplaceAll(vs[0], p.upstream, p.Host)}
		}
		w.Header()[k] = vs
	}
	if f != nil && (f.Kind == Stall || f.Kind == Drip) {
		// The client learns the full length, and never gets it.
		w.WriteHeader(resp.StatusCode)
		p.body(w, r, f, resp.Body)
		return
	}
	w.WriteHeader(resp.StatusCode)
	copyFlushed(w, resp.Body)
}

// copyFlushed copies body to w as it arrives: a slow upstream stays slow,
// not buffered into a stall.
func copyFlushed(w http.ResponseWriter, body io.Reader) {
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// body writes body as the fault says.
func (p *Proxy) body(w http.ResponseWriter, r *http.Request, f *fault, body io.Reader) {
	fl, _ := w.(http.Flusher)
	switch {
	case f == nil:
		io.Copy(w, body)
	case f.Kind == Stall:
		io.CopyN(w, body, f.After)
		if fl != nil {
			fl.Flush()
		}
		p.hold(r.Context())
	case f.Kind == Drip:
		b := make([]byte, 1)
		for {
			if _, err := io.ReadFull(body, b); err != nil {
				return
			}
			if _, err := w.Write(b); err != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
			select {
			case <-time.After(f.Interval):
			case <-r.Context().Done():
				return
			case <-p.done:
				return
			}
		}
	default:
		io.Copy(w, body)
	}
}

// hold waits until the client goes away or the proxy closes.
func (p *Proxy) hold(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-p.done:
	}
}

// Listener returns a listener on 127.0.0.1 that accepts connections and
// never answers (nor reads): a registry whose TLS or HTTP handshake hangs.
// Close it to release them.
func Listener() (net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &silent{Listener: l}, nil
}

type silent struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
	once  sync.Once
}

func (s *silent) start() {
	go func() {
		for {
			c, err := s.Listener.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
}

// Addr starts accepting (lazily, so the listener can be handed out first).
func (s *silent) Addr() net.Addr {
	s.once.Do(s.start)
	return s.Listener.Addr()
}

func (s *silent) Close() error {
	err := s.Listener.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	return err
}
