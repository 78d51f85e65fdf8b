package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/internal/wire"
	"github.com/krabka-go/krabka/metadata"
)

// Config configures a [Client]. [DefaultConfig] gives the defaults;
// Controllers must be set.
type Config struct {
	// Controllers are the "host:port" addresses of controller listeners
	// to start from (Kafka's bootstrap.controllers, the same list as
	// controller.quorum.bootstrap.servers). The Client learns the other
	// controllers and the leader from their answers.
	Controllers []string
	// ClientID is the request header's client id.
	ClientID string
	// RequestTimeout bounds one request, from the moment it is queued
	// until its answer, and one dial.
	RequestTimeout time.Duration
	// RetryBackoff is the first pause before trying again after a
	// controller could not be reached or knew no leader; it doubles up
	// to MaxRetryBackoff.
	RetryBackoff time.Duration
	// MaxRetryBackoff caps RetryBackoff's doubling.
	MaxRetryBackoff time.Duration
	// MaxFrameSize bounds a response frame.
	MaxFrameSize int32
	// Dial opens a connection; nil means a net.Dialer. It is the seam for
	// proxies and in-memory networks.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS, when not nil, makes every connection TLS (an SSL or SASL_SSL
	// listener): the handshake runs over what Dial returned, before any
	// request. An empty ServerName is set to the host dialled.
	TLS *tls.Config
	// SASL, when not nil, authenticates every connection (a
	// SASL_PLAINTEXT or SASL_SSL listener) after TLS and before any
	// request.
	SASL *SASL
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
}

// SASL holds the credentials of a SASL listener.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string
	// Username and Password are the credentials.
	Username, Password string
}

// DefaultConfig returns the defaults: client id "krabka-client", Kafka's
// controller.quorum.request.timeout.ms (2 s) as RequestTimeout, a 20 ms
// retry backoff doubling to 1 s, and the controllers' default frame
// limit.
func DefaultConfig() Config {
	p := transport.DefaultPeerConfig()
	return Config{
		ClientID:        "krabka-client",
		RequestTimeout:  p.RequestTimeout,
		RetryBackoff:    p.RetryBackoff,
		MaxRetryBackoff: p.MaxRetryBackoff,
		MaxFrameSize:    p.MaxFrameSize,
	}
}

// Validate reports every problem with c, or nil. It does not change c.
func (c Config) Validate() error {
	var errs []error
	if len(c.Controllers) == 0 {
		errs = append(errs, errors.New("client: Controllers is empty: name at least one controller listener (host:port)"))
	}
	for _, a := range c.Controllers {
		if _, port, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("client: controller %q: %w", a, err))
		} else if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			errs = append(errs, fmt.Errorf("client: controller %q: port must be 1-65535", a))
		}
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("client: RequestTimeout (%v) must be positive", c.RequestTimeout))
	}
	if c.RetryBackoff <= 0 || c.MaxRetryBackoff < c.RetryBackoff {
		errs = append(errs, fmt.Errorf("client: RetryBackoff (%v) must be positive and at most MaxRetryBackoff (%v)", c.RetryBackoff, c.MaxRetryBackoff))
	}
	if c.MaxFrameSize <= 0 {
		errs = append(errs, fmt.Errorf("client: MaxFrameSize (%d) must be positive", c.MaxFrameSize))
	}
	if c.SASL != nil {
		switch c.SASL.Mechanism {
		case transport.MechanismPlain, transport.MechanismScramSHA256, transport.MechanismScramSHA512:
		default:
			errs = append(errs, fmt.Errorf("client: SASL mechanism %q: want %s, %s or %s", c.SASL.Mechanism, transport.MechanismPlain, transport.MechanismScramSHA256, transport.MechanismScramSHA512))
		}
	}
	return errors.Join(errs...)
}

// Client talks to a quorum's controllers over the private RPCs: it sends
// each request to the leader it knows (a follower would forward it
// anyway), learns the leader from every answer's hint and the
// controllers' endpoints from DescribeCluster (KIP-919), and falls back
// to the bootstrap list when the leader is unknown or unreachable. Each
// controller gets one connection, opened on first use, that negotiates
// versions with ApiVersions before any other request.
//
// A Client is safe for concurrent use. Close it to release its
// connections.
type Client struct {
	cfg  Config
	peer transport.PeerConfig
	ctx  context.Context
	stop context.CancelFunc

	mu     sync.Mutex
	closed bool
	peers  map[string]*transport.Peer
	nodes  map[int32]string // controller id → address, from DescribeCluster
	leader int32            // -1 while unknown
	epoch  int32
	next   int // round robin over the candidates while no leader is known
}

// Dial returns a Client for cfg once one controller of cfg.Controllers
// has answered DescribeCluster, which names the controllers and the
// leader. It tries them in turn, with backoff, until ctx ends; the error
// then matches [ErrUnreachable] and says why the last one failed. A
// controller that fails in a way trying again cannot mend
// ([ErrAuthentication], [ErrMalformedResponse], or no DescribeCluster v1:
// kerr.UnsupportedVersion) is not asked again, and when every one has
// failed so, Dial returns their errors at once.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := transport.DefaultPeerConfig()
	p.ClientID = cfg.ClientID
	p.ClientSoftwareName = "krabka-client"
	p.RequestTimeout, p.RetryBackoff, p.MaxRetryBackoff = cfg.RequestTimeout, cfg.RetryBackoff, cfg.MaxRetryBackoff
	p.MaxFrameSize = cfg.MaxFrameSize
	dial := cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	p.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, &dialError{err: err}
		}
		return nc, nil
	}
	if cfg.TLS != nil {
		base := cfg.TLS
		p.TLS = func(host string) *tls.Config {
			c := base.Clone()
			if c.ServerName == "" {
				c.ServerName = host
			}
			return c
		}
	}
	if cfg.SASL != nil {
		p.SASL = &transport.SASLClient{Mechanism: cfg.SASL.Mechanism, Username: cfg.SASL.Username, Password: cfg.SASL.Password}
	}
	p.Logger = cfg.Logger
	runCtx, stop := context.WithCancel(context.Background())
	c := &Client{cfg: cfg, peer: p, ctx: runCtx, stop: stop, peers: map[string]*transport.Peer{}, nodes: map[int32]string{}, leader: -1, epoch: -1}
	var last error
	final := map[string]error{} // controllers that failed for good
	for b := c.backoff(); ; {
		addr := c.target()
		if _, ok := final[addr]; ok {
			continue
		}
		err := c.refresh(ctx, addr)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil && last != nil {
			// Keep why the controllers failed, not that ctx ended.
			c.Close()
			return nil, fmt.Errorf("%w: %w (last: %w)", ErrUnreachable, ctx.Err(), last)
		}
		last = fmt.Errorf("%s: %w", addr, err)
		if errors.Is(err, ErrMalformedResponse) || errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, ErrAuthentication) {
			final[addr] = last
			if len(final) == len(uniq(cfg.Controllers)) {
				c.Close()
				errs := make([]error, 0, len(final))
				for _, a := range slices.Sorted(maps.Keys(final)) {
					errs = append(errs, final[a])
				}
				return nil, fmt.Errorf("client: dial: %w", errors.Join(errs...))
			}
			continue
		}
		if err := b.wait(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: %w (last: %w)", ErrUnreachable, err, last)
		}
	}
}

// Close closes every connection; requests still waiting fail with
// [ErrClosed]. It is safe to call more than once.
func (c *Client) Close() {
	c.mu.Lock()
	peers := c.peers
	c.peers, c.closed = nil, true
	c.mu.Unlock()
	for _, p := range peers {
		p.Close()
	}
	c.stop()
}

// Leader returns the leader the Client last learned and its epoch; -1
// and the epoch when it knows none.
func (c *Client) Leader() (id, epoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader, c.epoch
}

// Controllers returns the controllers the Client knows, by id, as the
// last DescribeCluster answer listed them.
func (c *Client) Controllers() map[int32]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int32]string, len(c.nodes))
	for id, a := range c.nodes {
		out[id] = a
	}
	return out
}

// SubmitResult is where committed records landed.
type SubmitResult struct {
	// Offset is the offset of the first record, LastOffset that of the
	// last.
	Offset, LastOffset int64
	// Epoch is the leader epoch of the batch that holds them.
	Epoch int32
}

// SubmitChange sends records to the leader and returns once they are
// committed and applied there. Records that cannot be encoded fail with
// [ErrInvalidChange] before anything is sent; so does an empty list. A
// closed Client fails with [ErrClosed], a ctx already done with its error.
//
// The records are sent once. When a controller cannot be dialled the next
// one is tried, since nothing left the process; once they may have left,
// any failure is returned: [ErrOutcomeUnknown] when no answer came back
// (also when ctx ends while waiting), a [*NotLeaderError] or
// [ErrLeaderUnknown] when the controller answered that it is not the
// leader or knows none, [ErrInvalidChange] when the leader's image
// rejects them, [ErrShuttingDown]. After a NotLeaderError or
// ErrOutcomeUnknown the records may still commit: a caller that retries
// must make the retry safe to apply twice, or read the image first. The
// next call goes to the leader the answer named.
//
// opts set the condition the leader appends the records under
// ([IfUnchangedSince], [IfNoUncommittedTail]); a refused condition
// answers [ErrImageChanged] or [ErrUncommittedTail] and appends nothing.
// A conditional submission is sent as SubmitChange version 1, which a
// controller that serves only version 0 refuses.
func (c *Client) SubmitChange(ctx context.Context, records []metadata.Record, opts ...SubmitOption) (SubmitResult, error) {
	if len(records) == 0 {
		return SubmitResult{}, fmt.Errorf("%w: no records", ErrInvalidChange)
	}
	req := NewSubmitChangeRequest()
	for _, o := range opts {
		if err := o.apply(req); err != nil {
			return SubmitResult{}, err
		}
	}
	for _, r := range records {
		b, err := metadata.Encode(r)
		if err != nil {
			return SubmitResult{}, fmt.Errorf("%w: encode %s: %w", ErrInvalidChange, r.APIKey(), err)
		}
		req.Records = append(req.Records, b)
	}
	if err := ctx.Err(); err != nil {
		return SubmitResult{}, fmt.Errorf("client: SubmitChange: %w", err) // nothing was sent
	}
	for b := c.backoff(); ; {
		addr := c.target()
		resp, err := c.call(ctx, addr, req)
		switch {
		case err != nil && notSent(err) && errors.Is(err, ErrClosed):
			return SubmitResult{}, fmt.Errorf("client: SubmitChange: %w", err)
		case errors.Is(err, kerr.UnsupportedVersion):
			return SubmitResult{}, fmt.Errorf("client: SubmitChange to %s: the controller does not serve this version (conditional submissions need version 1), nothing was sent: %w", addr, err)
		case err != nil && notSent(err) && ctx.Err() == nil:
			c.unreachable(addr)
			if werr := b.wait(ctx); werr != nil {
				return SubmitResult{}, fmt.Errorf("%w: %w (last: %s: %w)", ErrUnreachable, werr, addr, err)
			}
			continue
		case err != nil:
			c.unreachable(addr)
			return SubmitResult{}, fmt.Errorf("client: SubmitChange to %s: %w: %w", addr, ErrOutcomeUnknown, err)
		}
		r, ok := resp.(*SubmitChangeResponse)
		if !ok {
			return SubmitResult{}, fmt.Errorf("client: SubmitChange to %s: %w: answered with %T", addr, ErrMalformedResponse, resp)
		}
		c.learn(ctx, addr, r.LeaderID, r.LeaderEpoch)
		if err := answerError(r.ErrorCode, r.ErrorMessage, r.LeaderID, r.LeaderEpoch); err != nil {
			return SubmitResult{}, fmt.Errorf("client: SubmitChange to %s: %w", addr, err)
		}
		if r.BaseOffset < 0 || r.Epoch < 0 {
			return SubmitResult{}, fmt.Errorf("client: SubmitChange to %s: %w (%w): success with offset %d and epoch %d", addr, ErrMalformedResponse, ErrOutcomeUnknown, r.BaseOffset, r.Epoch)
		}
		return SubmitResult{Offset: r.BaseOffset, LastOffset: r.BaseOffset + int64(len(records)) - 1, Epoch: r.Epoch}, nil
	}
}

// A SubmitOption is a condition the leader appends a submission's records
// under (raft.SubmitOption, on the wire). The zero SubmitOption sets none.
type SubmitOption struct {
	kind  int8
	since int64
	// bound marks a binding to the delegation token tokenID as token
	// describes it (nil: no such token).
	bound   bool
	tokenID string
	token   *metadata.DelegationToken
}

// IfDelegationToken appends the records only if the leader's committed
// image holds the delegation token id as observed describes it (nil: no
// token of that id) and no uncommitted change to it is ahead. See
// raft.IfDelegationToken.
func IfDelegationToken(id string, observed *metadata.DelegationToken) SubmitOption {
	return SubmitOption{bound: true, tokenID: id, token: observed}
}

// IfUnchangedSince appends the records only if no record after offset
// changed the leader's image: offset is the Offset of the image the
// records were made against (a ReadImage answer's, or an observer's).
// It implies [IfNoUncommittedTail]. See raft.IfUnchangedSince.
func IfUnchangedSince(offset int64) SubmitOption {
	return SubmitOption{kind: wire.ConditionUnchangedSince, since: offset}
}

// IfNoUncommittedTail appends the records only if no uncommitted record
// ahead of them changes the leader's image. See raft.IfNoUncommittedTail.
func IfNoUncommittedTail() SubmitOption { return SubmitOption{kind: wire.ConditionNoUncommittedTail} }

// apply sets o on req, keeping the strictest condition (an
// unchanged-since check with the lowest offset). A request binds one
// delegation token.
func (o SubmitOption) apply(req *SubmitChangeRequest) error {
	if o.kind != wire.ConditionNone {
		req.Condition, req.UnchangedSince = wire.StricterCondition(req.Condition, req.UnchangedSince, o.kind, o.since)
		req.Version = 1
	}
	if !o.bound {
		return nil
	}
	var token []byte
	if o.token != nil {
		b, err := metadata.Encode(o.token.Record())
		if err != nil {
			return fmt.Errorf("%w: encode the delegation token %s: %w", ErrInvalidChange, o.tokenID, err)
		}
		token = b
	}
	if req.TokenID != nil && (*req.TokenID != o.tokenID || !bytes.Equal(req.Token, token)) {
		return fmt.Errorf("%w: a submission is bound to one delegation token, not to %s and %s", ErrInvalidChange, *req.TokenID, o.tokenID)
	}
	req.TokenID, req.Token, req.Version = &o.tokenID, token, 1
	return nil
}

// ReadImage sends req (its Linearizable flag, config resources and topic
// names) to the leader and returns the answer, which holds the image at
// the offset it names (Offset: the last record the image includes). With
// Linearizable set the image holds every change committed before the
// call. A read is safe to repeat, so ReadImage tries again, at the leader
// an answer names or the next controller, after NOT_LEADER_OR_FOLLOWER,
// REQUEST_TIMED_OUT, BROKER_NOT_AVAILABLE and lost connections, until ctx
// ends; the error then wraps ctx's error and the last failure. A
// malformed answer fails at once with [ErrMalformedResponse].
func (c *Client) ReadImage(ctx context.Context, req *ReadImageRequest) (*ReadImageResponse, error) {
	if req == nil {
		return nil, errors.New("client: ReadImage: nil request")
	}
	resp, err := c.read(ctx, req, func(resp kmsg.Response) (int32, int32, error) {
		r, ok := resp.(*ReadImageResponse)
		if !ok {
			return -1, -1, fmt.Errorf("%w: answered with %T", ErrMalformedResponse, resp)
		}
		if err := answerError(r.ErrorCode, r.ErrorMessage, r.LeaderID, r.LeaderEpoch); err != nil {
			return r.LeaderID, r.LeaderEpoch, err
		}
		if len(r.Topics) != len(req.TopicNames) || len(r.ConfigResources) != len(req.ConfigResources) {
			return -1, -1, fmt.Errorf("%w: %d topics and %d resources for %d and %d asked", ErrMalformedResponse, len(r.Topics), len(r.ConfigResources), len(req.TopicNames), len(req.ConfigResources))
		}
		return r.LeaderID, r.LeaderEpoch, nil
	})
	if err != nil {
		return nil, fmt.Errorf("client: ReadImage: %w", err)
	}
	return resp.(*ReadImageResponse), nil
}

// MetadataFetch reads committed record batches from offset on, at most
// maxBytes of them (at least one whole batch when there is one), from
// the leader; [DecodeBatches] decodes the answer's Records. An answer with
// a SnapshotId (EndOffset ≥ 0) says the offset is below the log start:
// the records before EndOffset are only in that snapshot. Retries are as
// for [Client.ReadImage]; any other error code fails at once.
func (c *Client) MetadataFetch(ctx context.Context, offset int64, maxBytes int32) (*MetadataFetchResponse, error) {
	if offset < 0 || maxBytes <= 0 {
		return nil, fmt.Errorf("client: MetadataFetch: offset %d must be at least 0 and maxBytes %d positive", offset, maxBytes)
	}
	req := NewMetadataFetchRequest()
	req.FetchOffset, req.MaxBytes = offset, maxBytes
	resp, err := c.read(ctx, req, func(resp kmsg.Response) (int32, int32, error) {
		r, ok := resp.(*MetadataFetchResponse)
		if !ok {
			return -1, -1, fmt.Errorf("%w: answered with %T", ErrMalformedResponse, resp)
		}
		return r.LeaderID, r.LeaderEpoch, answerError(r.ErrorCode, nil, r.LeaderID, r.LeaderEpoch)
	})
	if err != nil {
		return nil, fmt.Errorf("client: MetadataFetch: %w", err)
	}
	return resp.(*MetadataFetchResponse), nil
}

// read sends a request that is safe to repeat until check accepts an
// answer, a failure is final, or ctx ends.
func (c *Client) read(ctx context.Context, req kmsg.Request, check func(kmsg.Response) (leaderID, epoch int32, err error)) (kmsg.Response, error) {
	var last error
	for b := c.backoff(); ; {
		addr := c.target()
		resp, err := c.call(ctx, addr, req)
		if err == nil {
			var id, epoch int32
			id, epoch, err = check(resp)
			if err == nil {
				c.learn(ctx, addr, id, epoch)
				return resp, nil
			}
			if !errors.Is(err, ErrMalformedResponse) {
				c.learn(ctx, addr, id, epoch)
			}
		} else {
			c.unreachable(addr)
		}
		if !retriable(err) {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		if ctx.Err() != nil && last != nil {
			return nil, fmt.Errorf("%w (last: %w)", ctx.Err(), last)
		}
		last = fmt.Errorf("%s: %w", addr, err)
		if werr := b.wait(ctx); werr != nil {
			return nil, fmt.Errorf("%w (last: %w)", werr, last)
		}
	}
}

// retriable reports whether a read that failed with err may be sent
// again.
func retriable(err error) bool {
	switch {
	case errors.Is(err, ErrMalformedResponse), errors.Is(err, ErrClosed), errors.Is(err, kerr.UnsupportedVersion), errors.Is(err, ErrAuthentication):
		return false
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrLeaderUnknown), errors.Is(err, ErrShuttingDown), errors.Is(err, ErrReadTimeout):
		return true
	}
	var ke *kerr.Error
	return !errors.As(err, &ke) // a transport failure
}

// notSent reports whether a request that failed with err certainly never
// left the process: the dial failed, or the connection was backing off.
func notSent(err error) bool {
	var de *dialError
	return errors.Is(err, transport.ErrBackoff) || errors.As(err, &de)
}

// dialError marks the failure of Config.Dial: no connection, so no
// request left the process.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// call sends req to addr and waits for the answer or ctx.
func (c *Client) call(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	p, err := c.peerFor(addr)
	if err != nil {
		return nil, err
	}
	type outcome struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan outcome, 1)
	if req.GetVersion() == 0 {
		// Version 0 asks for the highest version both ends serve; a
		// request that needs a later version (a conditional
		// SubmitChange) keeps it, and fails before it is sent when the
		// controller does not serve it.
		req.SetVersion(transport.NegotiateVersion)
	}
	if !p.Send(req, func(resp kmsg.Response, err error) { done <- outcome{resp, err} }) {
		return nil, fmt.Errorf("%w: request queue to %s is full", transport.ErrBackoff, addr)
	}
	select {
	case o := <-done:
		if o.err != nil && (errors.Is(o.err, wire.ErrMalformedBody) || errors.Is(o.err, wire.ErrMalformedHeader)) {
			return nil, fmt.Errorf("%w: %w", ErrMalformedResponse, o.err)
		}
		if o.err != nil && authFailure(o.err) {
			return nil, fmt.Errorf("%w: %w", ErrAuthentication, o.err)
		}
		if errors.Is(o.err, transport.ErrPeerClosed) {
			return nil, fmt.Errorf("%w: %w", ErrClosed, o.err)
		}
		return o.resp, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// peerFor returns the connection to addr, opening it on first use.
func (c *Client) peerFor(addr string) (*transport.Peer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, &dialError{err: ErrClosed} // nothing was sent
	}
	if p, ok := c.peers[addr]; ok {
		return p, nil
	}
	cfg := c.peer
	cfg.Addr = addr
	p, err := transport.DialPeer(c.ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("client: connect to %s: %w", addr, err)
	}
	c.peers[addr] = p
	return p, nil
}

// target returns where the next request goes: the leader's address when
// it is known, else the next of the bootstrap list and the controllers
// DescribeCluster named.
func (c *Client) target() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.nodes[c.leader]; ok && c.leader >= 0 {
		return a
	}
	candidates := slices.Clone(c.cfg.Controllers)
	for _, id := range slices.Sorted(maps.Keys(c.nodes)) {
		if a := c.nodes[id]; !slices.Contains(candidates, a) {
			candidates = append(candidates, a)
		}
	}
	a := candidates[c.next%len(candidates)]
	c.next++
	return a
}

// learn records the leader an answer from addr named, when its epoch is
// not older than the one known, and asks addr for the controllers'
// endpoints when that leader's is unknown.
func (c *Client) learn(ctx context.Context, addr string, leaderID, epoch int32) {
	c.mu.Lock()
	if epoch < c.epoch || (epoch == c.epoch && leaderID < 0) {
		c.mu.Unlock()
		return
	}
	c.leader, c.epoch = leaderID, epoch
	_, known := c.nodes[leaderID]
	c.mu.Unlock()
	if leaderID >= 0 && !known {
		// Best effort: without the endpoint the next request goes to
		// the bootstrap list, whose follower forwards it.
		_ = c.refresh(ctx, addr)
	}
}

// unreachable forgets the leader when it is at addr, so that the next
// request tries another controller.
func (c *Client) unreachable(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.nodes[c.leader]; ok && a == addr {
		c.leader = -1
	}
}

// refresh asks addr for the controllers (DescribeCluster with the
// controller endpoint type, KIP-919) and the leader among them.
func (c *Client) refresh(ctx context.Context, addr string) error {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = wire.EndpointTypeController
	resp, err := c.call(ctx, addr, req)
	if err != nil {
		return err
	}
	r, ok := resp.(*kmsg.DescribeClusterResponse)
	if !ok {
		return fmt.Errorf("%w: DescribeCluster answered with %T", ErrMalformedResponse, resp)
	}
	if r.GetVersion() < 1 {
		return fmt.Errorf("%w: DescribeCluster v%d cannot describe controllers", kerr.UnsupportedVersion, r.GetVersion())
	}
	if err := wire.ErrorForCode(r.ErrorCode); err != nil {
		return fmt.Errorf("DescribeCluster: %w", err)
	}
	nodes := make(map[int32]string, len(r.Brokers))
	for _, b := range r.Brokers {
		if b.Port <= 0 || b.Port > 65535 || b.Host == "" {
			return fmt.Errorf("%w: DescribeCluster lists controller %d at %q port %d", ErrMalformedResponse, b.NodeID, b.Host, b.Port)
		}
		nodes[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes = nodes
	if _, ok := nodes[r.ControllerID]; ok && c.leader < 0 {
		c.leader = r.ControllerID
	}
	return nil
}

// backoff returns the retry pacing of one call.
func (c *Client) backoff() *pacer {
	return &pacer{next: c.cfg.RetryBackoff, max: c.cfg.MaxRetryBackoff}
}

// pacer doubles a pause up to a maximum.
type pacer struct{ next, max time.Duration }

// wait pauses for the current backoff, or returns ctx's error first.
func (p *pacer) wait(ctx context.Context) error {
	t := time.NewTimer(p.next)
	defer t.Stop()
	p.next = min(2*p.next, cmp.Or(p.max, p.next))
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// uniq returns the distinct entries of a.
func uniq(a []string) []string {
	out := slices.Clone(a)
	slices.Sort(out)
	return slices.Compact(out)
}
