package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/krabka-go/krabka/bench/internal/hops"
)

const (
	// hopsTrace is the length of the execution traces -trace-hops takes.
	hopsTrace = 2 * time.Second
	// hopsDelay is how long after the start of the loop they start, past
	// its first writes.
	hopsDelay = time.Second
)

// traceHops takes an execution trace of hopsTrace from every node of a
// Krabka cluster at once (node i serves them on 127.0.0.1:pprofBase+i)
// and returns the breakdown of a write's time into its hops, in Markdown.
func traceHops(ctx context.Context, pprofBase, nodes, leader int) (string, error) {
	type got struct {
		data []byte
		err  error
	}
	res := make([]chan got, nodes)
	for i := range nodes {
		res[i] = make(chan got, 1)
		go func() {
			b, err := fetchTrace(ctx, fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/trace?seconds=%d", pprofBase+i, int(hopsTrace.Seconds())))
			res[i] <- got{b, err}
		}()
	}
	var lead *hops.Node
	var followers []*hops.Node
	var names []string
	var errs []error
	for i := range nodes {
		g := <-res[i]
		if g.err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, g.err))
			continue
		}
		n, err := hops.Read(bytes.NewReader(g.data))
		if err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, err))
			continue
		}
		if i == leader {
			lead = n
		} else {
			followers = append(followers, n)
			names = append(names, fmt.Sprintf("F%d is node %d", len(followers), i+1))
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("trace: %v", errs)
	}
	b := hops.Analyze(lead, followers)
	return fmt.Sprintf("### Krabka: where a write's time goes (%d nodes, 1 client, %v execution traces of every node)\n\n"+
		"L is node %d, the leader; %s.\n\n%s", nodes, hopsTrace, leader+1, strings.Join(names, ", "), b.Markdown()), nil
}

func fetchTrace(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, hopsTrace+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}
