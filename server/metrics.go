//go:build !mlwarden_sbatch

package server

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics live in a registry of their own per server, never the global one,
// so that two servers in one process (tests, replicas) do not collide.
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	verdictLat   *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	cacheHits    *prometheus.CounterVec
	scanFailures prometheus.Counter
	scans        *prometheus.CounterVec
	queueDropped prometheus.Counter
	queueDepth   prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mlwarden_http_requests_total",
			Help: "HTTP requests by endpoint and status code.",
		}, []string{"endpoint", "code"}),
		verdictLat: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mlwarden_admission_duration_seconds",
			Help:    "Time to answer an admission review, by outcome (allowed, denied).",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mlwarden_scans_in_flight",
			Help: "Image scans running now.",
		}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mlwarden_verdict_lookups_total",
			Help: "Verdict lookups by result: hit or miss.",
		}, []string{"result"}),
		scanFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mlwarden_scan_failures_total",
			Help: "Image scan attempts that failed (each retry counts).",
		}),
		scans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mlwarden_scans_total",
			Help: "Image scans finished, by origin (admission, events, harbor) and result.",
		}, []string{"origin", "result"}),
		queueDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mlwarden_scan_queue_dropped_total",
			Help: "Scans not queued because the queue was full (admission scans them later).",
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mlwarden_scan_queue_depth",
			Help: "Scans waiting in the queue.",
		}),
	}
	m.reg.MustRegister(m.requests, m.verdictLat, m.inFlight, m.cacheHits, m.scanFailures,
		m.scans, m.queueDropped, m.queueDepth,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// statusRecorder keeps the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) instrument(endpoint string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		s.metrics.requests.WithLabelValues(endpoint, fmt.Sprint(rec.code)).Inc()
	})
}

// keypairReloader serves the certificate on disk, re-reading it when its
// modification time changes (checked at most every 10 s), so a renewed
// cert-manager Secret is picked up without a restart.
type keypairReloader struct {
	certFile, keyFile string
	mu                sync.Mutex
	cert              *tls.Certificate
	mod               time.Time
	checked           time.Time
}

func newKeypairReloader(certFile, keyFile string) (*keypairReloader, error) {
	k := &keypairReloader{certFile: certFile, keyFile: keyFile}
	if err := k.load(); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *keypairReloader) load() error {
	st, err := os.Stat(k.certFile)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	c, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return fmt.Errorf("tls key pair: %w", err)
	}
	k.cert, k.mod = &c, st.ModTime()
	return nil
}

func (k *keypairReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if time.Since(k.checked) > 10*time.Second {
		k.checked = time.Now()
		if st, err := os.Stat(k.certFile); err == nil && !st.ModTime().Equal(k.mod) {
			_ = k.load() // keep serving the old pair if the new one is half-written
		}
	}
	return k.cert, nil
}
