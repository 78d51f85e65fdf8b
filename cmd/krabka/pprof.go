package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofEnv names the environment variable that makes server-start serve
// Go's runtime profiles (net/http/pprof, under /debug/pprof/) on the
// host:port it holds, for profiling a node under load (bench/ does). It is
// off unless set: the endpoints reveal the process's internals to anyone
// who reaches the address, so it belongs on a loopback address.
const pprofEnv = "KRABKA_PPROF"

// startPprof serves the profiling endpoints on addr until stop is
// called; stop returns once the server's goroutine has exited. bound is
// the address actually listened on (addr may name port 0).
func startPprof(addr string) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("%s=%q: %w", pprofEnv, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// Stopping cuts short a profile still being taken.
	return serveHTTP(ln, mux), ln.Addr().String(), nil
}

// serveHTTP serves h on ln until stop is called; stop gives the requests
// in progress a second, then closes their connections, and returns once
// the server's goroutine has exited.
func serveHTTP(ln net.Listener, h http.Handler) (stop func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // returns http.ErrServerClosed after Shutdown
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	}
}
