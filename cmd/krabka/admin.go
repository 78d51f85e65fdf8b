package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/metrics/prom"
	"github.com/krabka-go/krabka/raft"
)

// The admin endpoint of server-start (docs/operations.md): /metrics,
// /livez and /readyz over plain HTTP on --admin-address. Kafka has no
// controller property for it (it exposes JMX), so it is a flag of
// Krabka's own and the properties file stays Kafka's.

const (
	// adminAddressFlag names the flag that turns the admin endpoint on.
	adminAddressFlag = "admin-address"
	// defaultHealthcheckAddress is where healthcheck looks by default:
	// the port deploy/docker-compose.yml gives --admin-address.
	defaultHealthcheckAddress = "127.0.0.1:9404"
	// defaultReadyMaxLag is --ready-max-lag's default: how many offsets a
	// follower's high watermark may trail the leader's for caught-up
	// (raft.DefaultHealthOptions's MaxLag).
	defaultReadyMaxLag = 1000
)

// adminOptions are server-start's admin flags.
type adminOptions struct {
	address     string
	readyMaxLag int64
	readTimeout time.Duration
}

func (o *adminOptions) register(cmd *cobra.Command) {
	d := raft.DefaultHealthOptions()
	cmd.Flags().StringVar(&o.address, adminAddressFlag, "",
		"serve /metrics, /livez and /readyz over HTTP on this host:port (off when empty)")
	cmd.Flags().Int64Var(&o.readyMaxLag, "ready-max-lag", defaultReadyMaxLag,
		"offsets a follower's high watermark may trail the leader's for /readyz's caught-up check")
	cmd.Flags().DurationVar(&o.readTimeout, "ready-read-timeout", d.ReadTimeout,
		"how long /readyz's linearizable-read check waits for its read (0: the default)")
}

// validate refuses a malformed address or bound before anything starts.
func (o *adminOptions) validate() error {
	if o.address != "" {
		if err := checkHostPort(o.address); err != nil {
			return fmt.Errorf("--%s %q: %w", adminAddressFlag, o.address, err)
		}
	}
	if o.readyMaxLag < 0 {
		return fmt.Errorf("--ready-max-lag %d: must not be negative", o.readyMaxLag)
	}
	if o.readTimeout < 0 {
		return fmt.Errorf("--ready-read-timeout %v: must not be negative", o.readTimeout)
	}
	return nil
}

// healthOptions are the bounds of the checks the flags give; a read
// timeout of 0 (adminOptions made without the flags) is the default.
func (o *adminOptions) healthOptions() raft.HealthOptions {
	h := raft.DefaultHealthOptions()
	h.MaxLag = o.readyMaxLag
	if o.readTimeout > 0 {
		h.ReadTimeout = o.readTimeout
	}
	return h
}

// checkHostPort accepts host:port with a port number (0 asks for a free
// one) and an optional host.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if strings.ContainsAny(host, "/ ") {
		return fmt.Errorf("bad host %q", host)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port == "" || strconv.FormatUint(n, 10) != port {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// newMetricsRegistry returns a registry holding the node's Recorder and
// the Go runtime and process collectors.
func newMetricsRegistry() (*prometheus.Registry, *prom.Recorder, error) {
	reg := prometheus.NewRegistry()
	rec, err := prom.New(reg)
	if err != nil {
		return nil, nil, err
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, err
	}
	return reg, rec, nil
}

// healthChecks are what /livez and /readyz ask.
type healthChecks interface {
	LiveChecks(opts raft.HealthOptions) ([]raft.CheckResult, error)
	ReadyChecks(ctx context.Context, opts raft.HealthOptions) ([]raft.CheckResult, error)
}

// adminHandler serves /metrics from reg and the checks of c with the
// bounds of opts: /livez and /readyz run every check of their kind, and
// /livez/NAME and /readyz/NAME the one check NAME (etcd's and
// Kubernetes' per-check paths). Every check run is counted in reg
// (healthMetrics).
func adminHandler(reg *prometheus.Registry, c healthChecks, opts raft.HealthOptions) (http.Handler, error) {
	hm, err := newHealthMetrics(reg)
	if err != nil {
		return nil, err
	}
	live := func(_ context.Context, o raft.HealthOptions) ([]raft.CheckResult, error) { return c.LiveChecks(o) }
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("GET /livez", healthHandler(healthEndpoint{"livez", nil, live, hm}, opts))
	mux.Handle("GET /readyz", healthHandler(healthEndpoint{"readyz", nil, c.ReadyChecks, hm}, opts))
	mux.Handle("GET /livez/{check}", healthHandler(healthEndpoint{"livez", raft.LiveCheckNames(), live, hm}, opts))
	mux.Handle("GET /readyz/{check}", healthHandler(healthEndpoint{"readyz", raft.ReadyCheckNames(), c.ReadyChecks, hm}, opts))
	return mux, nil
}

// healthEndpoint is one health path: kind is livez or readyz; names,
// when not nil, makes it the path of one check (its last path element),
// one of names.
type healthEndpoint struct {
	kind    string
	names   []string
	run     func(context.Context, raft.HealthOptions) ([]raft.CheckResult, error)
	metrics *healthMetrics
}

// healthMetrics count the checks the endpoints run, with Kubernetes'
// shape of its health-check metrics: krabka_healthcheck{name,type} is 1
// when the last run of the check passed and 0 when it failed, and
// krabka_healthchecks_total{name,type,status} counts the runs by
// status (success or error). type is livez or readyz. They move only
// when an endpoint is asked: a scrape of /metrics runs no check.
type healthMetrics struct {
	last  *prometheus.GaugeVec
	total *prometheus.CounterVec
}

func newHealthMetrics(reg prometheus.Registerer) (*healthMetrics, error) {
	hm := &healthMetrics{
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "krabka_healthcheck",
			Help: "1 when the last run of the health check passed, 0 when it failed."}, []string{"name", "type"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "krabka_healthchecks_total",
			Help: "Runs of the health check by status (success or error)."}, []string{"name", "type", "status"}),
	}
	for _, c := range []prometheus.Collector{hm.last, hm.total} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register the health-check metrics: %w", err)
		}
	}
	return hm, nil
}

func (hm *healthMetrics) record(kind string, rs []raft.CheckResult) {
	for _, r := range rs {
		v, status := 1.0, "success"
		if r.Err != nil {
			v, status = 0, "error"
		}
		hm.last.WithLabelValues(r.Name, kind).Set(v)
		hm.total.WithLabelValues(r.Name, kind, status).Inc()
	}
}

// healthHandler answers one health endpoint in etcd's form: 200 "ok"
// when every check passed (with ?verbose, a "[+]name ok" line per check
// first), else 503 with a "[+]name ok" or "[-]name failed: reason" line
// per check and "<kind> check failed". ?exclude=name (repeatable) leaves
// a check out of an endpoint of every check. A query that does not
// parse, an unknown parameter or value, an unknown check name to exclude
// and an exclude on the path of one check answer 400 and say why; the
// path of a check that does not exist answers 404.
func healthHandler(ep healthEndpoint, opts raft.HealthOptions) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		verbose, exclude, err := parseHealthQuery(r.URL.RawQuery)
		if err != nil {
			http.Error(w, "/"+ep.kind+": "+err.Error(), http.StatusBadRequest)
			return
		}
		o := opts
		o.Exclude = exclude
		if ep.names != nil {
			check := r.PathValue("check")
			if !slices.Contains(ep.names, check) {
				http.Error(w, fmt.Sprintf("/%s/%s: no such check (checks: %s)", ep.kind, check, strings.Join(ep.names, ", ")), http.StatusNotFound)
				return
			}
			if len(exclude) > 0 {
				http.Error(w, fmt.Sprintf("/%s/%s: exclude applies to /%s, not to the path of one check", ep.kind, check, ep.kind), http.StatusBadRequest)
				return
			}
			o.Exclude = slices.DeleteFunc(slices.Clone(ep.names), func(n string) bool { return n == check })
		}
		rs, err := ep.run(r.Context(), o)
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, raft.ErrUnknownCheck) {
				code = http.StatusBadRequest
			}
			http.Error(w, "/"+ep.kind+": "+err.Error(), code)
			return
		}
		ep.metrics.record(ep.kind, rs)
		var b strings.Builder
		failed := false
		for _, c := range rs {
			if c.Err != nil {
				failed = true
				fmt.Fprintf(&b, "[-]%s failed: %s\n", c.Name, oneLine(c.Err.Error()))
			} else {
				fmt.Fprintf(&b, "[+]%s ok\n", c.Name)
			}
		}
		if failed {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, b.String()+ep.kind+" check failed\n")
			return
		}
		if verbose {
			_, _ = io.WriteString(w, b.String())
		}
		_, _ = io.WriteString(w, "ok\n")
	}
}

// parseHealthQuery reads a health endpoint's query: verbose (no value,
// true or false) and any number of exclude=name.
func parseHealthQuery(raw string) (verbose bool, exclude []string, err error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return false, nil, fmt.Errorf("bad query: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch k {
		case "verbose":
			for _, v := range q[k] {
				switch v {
				case "", "true":
					verbose = true
				case "false":
				default:
					return false, nil, fmt.Errorf("verbose=%q: want no value, true or false", v)
				}
			}
		case "exclude":
			for _, v := range q[k] {
				if v == "" {
					return false, nil, errors.New("exclude needs a check name")
				}
				exclude = append(exclude, v)
			}
		default:
			return false, nil, fmt.Errorf("unknown parameter %q (want verbose or exclude)", k)
		}
	}
	return verbose, exclude, nil
}

// oneLine keeps a reason on its line: a joined error's newlines become
// "; ".
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// startAdmin serves h on addr until stop is called (see serveHTTP).
// bound is the address listened on.
func startAdmin(addr string, h http.Handler) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--%s %s: %w", adminAddressFlag, addr, err)
	}
	return serveHTTP(ln, h), ln.Addr().String(), nil
}

// newHealthcheckCommand builds "krabka healthcheck": it asks a node's
// admin endpoint whether the node is ready (or live), for a container
// HEALTHCHECK in an image without a shell or curl.
func newHealthcheckCommand() *cobra.Command {
	var addr, check string
	var timeout time.Duration
	var verbose bool
	var exclude []string
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when a node's admin endpoint reports it ready (for Docker HEALTHCHECK)",
		Long: "healthcheck asks GET /readyz (or /livez with --check live) of the admin\n" +
			"endpoint that server-start serves with --admin-address, and exits 0 when\n" +
			"it answers 200, 1 otherwise, printing the node's reason. --verbose prints\n" +
			"every named check with its result (?verbose); --exclude leaves a check out\n" +
			"(?exclude=NAME, repeatable), as etcd's health endpoints do.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkHostPort(addr); err != nil {
				return fmt.Errorf("--%s %q: %w", adminAddressFlag, addr, err)
			}
			var path string
			switch check {
			case "ready":
				path = "/readyz"
			case "live":
				path = "/livez"
			default:
				return fmt.Errorf("--check %q: want ready or live", check)
			}
			q := url.Values{}
			if verbose {
				q.Set("verbose", "")
			}
			for _, name := range exclude {
				q.Add("exclude", name)
			}
			target := "http://" + addr + path
			if len(q) > 0 {
				target += "?" + q.Encode()
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), string(body))
			return err
		},
	}
	cmd.Flags().StringVar(&addr, adminAddressFlag, defaultHealthcheckAddress, "the admin endpoint's host:port")
	cmd.Flags().StringVar(&check, "check", "ready", "ready (/readyz) or live (/livez)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "print every check with its result")
	cmd.Flags().StringArrayVar(&exclude, "exclude", nil, "a check to leave out (repeatable)")
	return cmd
}

var _ healthChecks = (*raft.Controller)(nil)
