package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/krabka-go/krabka/internal/latency"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn is one accepted connection. Its reader goroutine (serve) runs the
// handshake, then reads, decodes and dispatches requests; its writer
// goroutine writes the answers in request order.
type conn struct {
	srv  *Server
	nc   net.Conn
	ip   string
	info ConnInfo
	// sasl is the handshake of a SASL listener, nil on another, and
	// session the session it authenticated; both are the reader's.
	sasl    *SASL
	session saslSession

	closeOnce sync.Once
}

// completion is one answered request on its way to the writer.
type completion struct {
	seq  uint64
	corr int32
	api  int16 // the request's API key
	// read and answered stamp the request's read and its answer's
	// completion in a measuring build (package latency); not the last
	// field, where an empty one would take room.
	read, answered latency.Stamp
	resp           kmsg.Response
	close          bool // close the connection instead of answering
	// barrier, when not nil, is closed by the writer once every earlier
	// answer is written; nothing is written for it. The reader then owns
	// the connection for a re-authentication.
	barrier chan struct{}
}

// Reply answers one request. Exactly one of Send and Close takes effect;
// both are safe to call from any goroutine and never block.
type Reply struct {
	seq   uint64
	corr  int32
	api   int16
	read  latency.Stamp
	done  chan<- completion
	ctx   context.Context
	taken atomic.Bool
}

// served is a request and its Reply, allocated as one object: both live
// until the handler has answered and let go of the request.
type served struct {
	req   Request
	reply Reply
}

// Send queues resp as the answer; the writer sends it once every earlier
// request of the connection has been answered. resp's version must be the
// request's (kmsg's ResponseKind does that). It returns false when the
// request was already answered or the connection has closed.
func (r *Reply) Send(resp kmsg.Response) bool {
	if resp == nil {
		panic("transport: Reply.Send with a nil response")
	}
	return r.complete(completion{seq: r.seq, corr: r.corr, api: r.api, resp: resp, read: r.read, answered: latency.Now()})
}

// Close answers the request by closing the connection, after every earlier
// answer has been written, as Kafka does for requests it will not serve.
// It returns false when the request was already answered or the connection
// has closed.
func (r *Reply) Close() bool {
	return r.complete(completion{seq: r.seq, close: true})
}

func (r *Reply) complete(c completion) bool {
	if r.taken.Swap(true) || r.ctx.Err() != nil {
		return false
	}
	select {
	case r.done <- c:
		return true
	default:
		// done has room for every request holding an in-flight slot, and
		// each request completes once.
		panic("transport: invariant: completion queue full")
	}
}

// shutdown closes the network connection once; it unblocks the reader and
// the writer.
func (c *conn) shutdown() {
	c.closeOnce.Do(func() { _ = c.nc.Close() })
}

func (c *conn) serve(srvCtx context.Context) {
	s := c.srv
	defer func() {
		c.shutdown()
		s.limit.release(c.ip)
		s.active.Add(-1)
		s.cfg.Meter.Disconnected()
	}()
	ctx, cancel := context.WithCancel(srvCtx)
	defer cancel()
	// Server shutdown and connection end both unblock every read and
	// write through the deadline, since net.Conn ignores contexts.
	raw := c.nc // the handshake may replace c.nc; the callback must not read it
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Now()) })
	defer stop()
	log := s.log.With(keyConnID, c.info.ID, keyRemoteAddr, c.info.RemoteAddr.String())

	if err := c.handshake(ctx); err != nil {
		log.LogAttrs(ctx, slog.LevelDebug, "handshake failed", slog.Any(keyError, err))
		return
	}

	slots := make(chan struct{}, s.cfg.MaxInFlight)
	done := make(chan completion, s.cfg.MaxInFlight)
	var writer sync.WaitGroup
	writer.Go(func() {
		defer cancel() // a writer that stops ends the connection
		if err := c.write(ctx, done, slots); err != nil {
			log.LogAttrs(ctx, slog.LevelDebug, "writer stopped", slog.Any(keyError, err))
		}
	})
	defer writer.Wait()
	defer cancel()

	reason, err := c.read(ctx, done, slots)
	switch reason {
	case closeInvalid:
		s.closedInvalid.Add(1)
		s.invalid.count(err)
		log.LogAttrs(ctx, s.invalidLevel(time.Now()), "closing connection: invalid request", slog.Any(keyError, err))
	case closeIdle:
		s.closedIdle.Add(1)
		log.LogAttrs(ctx, slog.LevelDebug, "closing idle connection")
	case closeExpired:
		s.closedExpired.Add(1)
		log.LogAttrs(ctx, slog.LevelDebug, "closing connection: SASL session expired")
	case closeReauthFailed:
		s.reauthFailed.Add(1)
		log.LogAttrs(ctx, slog.LevelDebug, "closing connection: re-authentication failed", slog.Any(keyError, err))
	default:
		if err != nil && ctx.Err() == nil {
			log.LogAttrs(ctx, slog.LevelDebug, "connection ended", slog.Any(keyError, err))
		}
	}
}

// handshakeContext bounds a handshake or re-authentication by
// HandshakeTimeout: the context it returns ends then, and the
// connection's deadline is set to it.
func (c *conn) handshakeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.srv.cfg.HandshakeTimeout
	if d <= 0 {
		return ctx, func() {}
	}
	_ = c.nc.SetDeadline(time.Now().Add(d))
	return context.WithTimeout(ctx, d)
}

func (c *conn) handshake(ctx context.Context) error {
	hctx, cancel := c.handshakeContext(ctx)
	defer cancel()
	var nc net.Conn
	var p Principal
	var err error
	if h, ok := c.srv.cfg.Handshake.(SASL); ok {
		// The listener enforces the session's lifetime and serves its
		// re-authentication (KIP-368).
		c.sasl = &h
		nc, c.session, err = h.upgradeSession(hctx, c.nc)
		p = c.session.principal
	} else {
		nc, p, err = c.srv.cfg.Handshake.Upgrade(hctx, c.nc)
	}
	if err != nil {
		return err
	}
	if nc != c.nc {
		// The upgraded connection (TLS over c.nc) is what the reader, the
		// writer and the deadline must act on from now on.
		c.nc = nc
		context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	}
	c.info.Principal = p
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return err
	}
	// Checked after clearing the deadline: a cancellation that came
	// earlier had its deadline cleared too, one that comes later sets it
	// again.
	return ctx.Err()
}

// readBufferSize is the size of a connection's read buffer.
const readBufferSize = 16 << 10

// maxCoalesce is the size at which the writer stops adding answers to
// one write: large answers (fetches of up to a MiB) go out on their own
// instead of piling up in memory.
const maxCoalesce = 64 << 10

// closeReason says why the reader stopped.
type closeReason int

const (
	closeEOF          closeReason = iota // peer closed, connection ended, or server closing
	closeInvalid                         // a frame or request Kafka would close for
	closeIdle                            // IdleTimeout passed without a request
	closeExpired                         // a request after the SASL session expired (KIP-368)
	closeReauthFailed                    // a re-authentication failed
)

// read is the reader loop. It takes an in-flight slot before each frame,
// so that at most MaxInFlight requests await answers, then reads a frame
// with the idle deadline, decodes it and dispatches it.
func (c *conn) read(ctx context.Context, done chan<- completion, slots chan struct{}) (closeReason, error) {
	cfg := c.srv.cfg
	var seq uint64
	// Buffered: pipelined requests that arrive together (many clients
	// sharing a connection) are read with one system call, and a frame's
	// size prefix and body with one, instead of two per frame. The
	// deadlines still apply to every read from the connection.
	in := bufio.NewReaderSize(c.nc, readBufferSize)
	dec := wire.Decoder{UnstableAPIVersions: cfg.UnstableAPIVersions, Claimed: cfg.ClaimedAPIs}
	// spare is the frame of the last request when nothing decoded from it
	// outlives Serve (a Fetch, wire.Request.Transient): the next frame
	// is read into it.
	var spare []byte
	var lastFetch latency.Stamp
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return closeEOF, ctx.Err()
		}
		if cfg.IdleTimeout > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(cfg.IdleTimeout))
			// Setting a deadline overrides the one a cancellation set; a
			// cancellation after this check sets it again.
			if err := ctx.Err(); err != nil {
				return closeEOF, err
			}
		}
		// Otherwise a fresh buffer per frame: decoded requests alias their
		// frame and may still be in use by the handler when the next
		// frame arrives.
		frame, err := wire.ReadFrame(in, spare, cfg.MaxFrameSize)
		read := latency.Now()
		spare = nil
		if err == nil {
			cfg.Meter.Received(len(frame) + frameOverhead)
		}
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return closeEOF, ctx.Err()
			case errors.Is(err, wire.ErrFrameSize):
				return closeInvalid, err
			case errors.Is(err, os.ErrDeadlineExceeded):
				return closeIdle, err
			case errors.Is(err, io.EOF):
				return closeEOF, nil
			}
			return closeEOF, err
		}
		if c.sasl != nil {
			switch reason, handled, err := c.afterAuthentication(ctx, in, frame, &seq, done); {
			case reason != closeEOF || err != nil:
				return reason, err
			case handled:
				continue
			}
		}
		var req wire.Request
		if err := dec.Decode(frame, &req); err != nil {
			re, ok := errors.AsType[*wire.RequestError](err)
			if !ok || re.Close {
				return closeInvalid, err
			}
			// ApiVersions at an unsupported version: answered at v0.
			done <- completion{seq: seq, corr: re.Header.CorrelationID, resp: re.Answer}
			seq++
			continue
		}
		x := &served{
			req:   Request{Header: req.Header, Body: req.Body, Conn: c.info},
			reply: Reply{seq: seq, corr: req.Header.CorrelationID, api: req.Header.APIKey, read: read, done: done, ctx: ctx},
		}
		if latency.Enabled && req.Header.APIKey == wire.KeyFetch {
			latency.Between("fetch: from the last on the connection", lastFetch, read)
			lastFetch = read
		}
		seq++
		cfg.Handler.Serve(ctx, &x.req, &x.reply)
		if req.Transient {
			spare = frame
		}
	}
}

// write is the writer loop: it collects completions, which may arrive in
// any order, and writes them strictly in sequence order, releasing one
// in-flight slot per answer written.
func (c *conn) write(ctx context.Context, done <-chan completion, slots <-chan struct{}) error {
	pending := make(map[uint64]completion)
	var next uint64
	var buf []byte
	var written []completion // in a measuring build: the answers in buf
	// flush writes the answers framed in buf with one write and frees
	// their n in-flight slots.
	flush := func(n int) error {
		if n == 0 {
			return nil
		}
		if d := c.srv.cfg.WriteTimeout; d > 0 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(d))
			if err := ctx.Err(); err != nil { // as in read
				return err
			}
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.shutdown()
			return err
		}
		c.srv.cfg.Meter.Sent(n, len(buf))
		if latency.Enabled {
			recordWritten(written)
			written = written[:0]
		}
		for range n {
			<-slots
		}
		buf = buf[:0]
		return nil
	}
	for {
		select {
		case x := <-done:
			pending[x.seq] = x
		case <-ctx.Done():
			return ctx.Err()
		}
		// Answers that are ready together (a group commit completes many
		// writes at once) go out in one write: one system call instead of
		// one per answer.
	drain:
		for {
			select {
			case x := <-done:
				pending[x.seq] = x
			default:
				break drain
			}
		}
		framed := 0
		for {
			x, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if x.close {
				if err := flush(framed); err != nil {
					return err
				}
				c.shutdown()
				return errors.New("handler closed the connection")
			}
			if x.barrier != nil {
				if err := flush(framed); err != nil {
					return err
				}
				framed = 0
				<-slots
				close(x.barrier)
				continue
			}
			buf = wire.AppendResponse(buf, x.corr, x.resp)
			framed++
			if latency.Enabled {
				written = append(written, x)
			}
			if len(buf) >= maxCoalesce {
				if err := flush(framed); err != nil {
					return err
				}
				framed = 0
			}
		}
		if err := flush(framed); err != nil {
			return err
		}
	}
}

// recordWritten records, in a measuring build, how long each written
// answer's request waited for its answer and the answer for its write.
func recordWritten(written []completion) {
	now := latency.Now()
	for _, x := range written {
		if x.api == wire.KeyFetch {
			latency.Between("fetch: read → answered", x.read, x.answered)
			latency.Between("fetch: answered → written", x.answered, now)
			continue
		}
		latency.Between("request: read → answered", x.read, x.answered)
		latency.Between("request: answered → written", x.answered, now)
	}
}
