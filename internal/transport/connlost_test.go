package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// ConnectionLost tells a refused, reset or closed connection from a
// timeout: only the former says the peer's process is gone.
func TestConnectionLost(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused dial", fmt.Errorf("%w: %w", ErrDisconnected, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"reset", fmt.Errorf("%w: %w", ErrDisconnected, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		{"closed by the peer", fmt.Errorf("%w: %w", ErrDisconnected, io.EOF), true},
		{"backing off after a refused dial", fmt.Errorf("%w: %w", ErrBackoff, ErrConnRefused), true},
		{"request timeout", ErrRequestTimeout, false},
		{"closed after a request timeout", fmt.Errorf("%w: after %w", ErrDisconnected, ErrRequestTimeout), false},
		{"read deadline", fmt.Errorf("%w: %w", ErrDisconnected, timeout), false},
		{"dial timed out", fmt.Errorf("%w: %w", ErrDisconnected, context.DeadlineExceeded), false},
		{"backing off after a dial timeout", fmt.Errorf("%w: %w", ErrBackoff, context.DeadlineExceeded), false},
		{"peer closed here", ErrPeerClosed, false},
		{"other", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		if got := ConnectionLost(tc.err); got != tc.want {
			t.Errorf("%s: ConnectionLost(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
