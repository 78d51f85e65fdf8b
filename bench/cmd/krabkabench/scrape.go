package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// metricsProbe is the metric every scrape must hold: a node that answers
// /metrics without it is not recording Kafka's raft metrics.
const metricsProbe = "kafka_server_raftmetrics_current_state"

// scraper fetches every node's /metrics at a fixed interval, as a
// Prometheus server would, so that the cost of metrics measured includes
// their collection and exposition, not only their recording.
type scraper struct {
	urls     []string
	interval time.Duration
	client   *http.Client

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	stats  scrapeStats
}

// scrapeStats counts the scrapes of one system.
type scrapeStats struct {
	ok, failed int
	bytes      int64
	lastErr    error
}

func newScraper(urls []string, interval time.Duration) *scraper {
	return &scraper{urls: urls, interval: interval, client: &http.Client{Timeout: 5 * time.Second}}
}

// scrapeOnce fetches url and checks that it holds metricsProbe.
func (s *scraper) scrapeOnce(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if !bytes.Contains(body, []byte(metricsProbe)) {
		return 0, fmt.Errorf("GET %s: no %s in %d bytes", url, metricsProbe, len(body))
	}
	return int64(len(body)), nil
}

// start scrapes every node once, failing if one does not answer with
// Kafka's metrics, then keeps scraping in the background until stop. A
// scraper already running is left as it is.
func (s *scraper) start(ctx context.Context) error {
	for _, u := range s.urls {
		if _, err := s.scrapeOnce(ctx, u); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return nil
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel, s.done = cancel, make(chan struct{})
	go s.loop(bg, s.done)
	return nil
}

func (s *scraper) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, u := range s.urls {
			n, err := s.scrapeOnce(ctx, u)
			if ctx.Err() != nil {
				return
			}
			s.mu.Lock()
			if err != nil {
				// A node the harness killed for a failover round does not
				// answer until it restarts: that counts, it does not stop
				// the run.
				s.stats.failed++
				s.stats.lastErr = err
			} else {
				s.stats.ok++
				s.stats.bytes += n
			}
			s.mu.Unlock()
		}
	}
}

// stop ends the background scrapes and returns what they counted.
func (s *scraper) stop() scrapeStats {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel, s.done = nil, nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}
