// Command embedhost is a program that embeds a Krabka controller, as an
// application embedding package raft would, for the fault campaign of
// test/faults. It is not part of the krabka binary.
//
//	embedhost <server.properties> <http-address>
//
// It starts the controller of the properties file with [raft.Start] (the
// campaign gives it a node id outside the static voter set and
// controller.quorum.bootstrap.servers, so it is an observer that follows
// the leader) and serves two requests over HTTP:
//
//   - POST /submit with one encoded metadata record as the body calls
//     [raft.Controller.SubmitChange], which forwards the record to the
//     leader over the private SubmitChange RPC, and answers 200 with
//     "<offset> <epoch>", 422 with the error when the change was refused
//     (it had no effect), or 503 with the error for every other failure,
//     whose outcome the caller cannot know ([raft.ErrOutcomeUnknown], a
//     leader change while waiting, the request's own cancellation).
//   - GET /state answers "<role> <leader id> <epoch>" from
//     [raft.Controller.QuorumState].
//
// The campaign builds it with the build tags of the krabka binary under
// test, so that a bug-zoo tag reaches the forwarding it re-injects.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: embedhost <server.properties> <http-address>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "embedhost:", err)
		os.Exit(1)
	}
}

func run(props, httpAddr string) error {
	cfg, warnings, err := raft.LoadConfig(props)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	for _, w := range warnings {
		logger.Warn("property not used", "warning", w.String())
	}
	cfg.Logger = logger
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := raft.Start(context.Background(), cfg)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: httpAddr, Handler: handler(c), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	return errors.Join(err, c.Shutdown(shutdownCtx))
}

// handler serves /submit and /state for controller c.
func handler(c *raft.Controller) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec, err := metadata.Decode(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res, err := c.SubmitChange(r.Context(), []metadata.Record{rec})
		switch {
		case err == nil:
			fmt.Fprintf(w, "%d %d", res.Offset, res.Epoch)
		case errors.Is(err, raft.ErrInvalidChange):
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		default:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, _ *http.Request) {
		st := c.QuorumState()
		fmt.Fprintf(w, "%s %d %d", st.Role, st.LeaderID, st.Epoch)
	})
	return mux
}
