package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/wire"
)

// Client talks to one agent. It is safe for concurrent use.
type Client struct {
	addr string
	cfg  Config

	mu      sync.Mutex
	sess    *session
	dialing chan struct{} // closed when the dial in progress ends
	closed  bool
	backoff time.Duration
	nextTry time.Time

	ctx    context.Context
	cancel context.CancelFunc
	reqID  atomic.Uint64

	reconnects  atomic.Int64
	remoteTasks atomic.Int64  // tasks decided by a call to the agent
	reserve     reserveCell   // the latest background reserve the agent sent
	local       *localDecider // nil unless Config.LocalDecisions
}

// Dial connects to the agent at addr ("host:port") and says Hello; the
// Client then keeps a connection up by itself until Close.
func Dial(ctx context.Context, addr string, cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{addr: addr, cfg: cfg}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if _, err := c.session(ctx); err != nil {
		c.cancel()
		return nil, err
	}
	if cfg.LocalDecisions {
		c.local = newLocalDecider(c)
		go c.local.runTables(c.ctx)
		go c.local.runReports(c.ctx)
	}
	return c, nil
}

// localFlushTimeout bounds the last report of local decisions at Close.
const localFlushTimeout = time.Second

// Reconnects counts the connections made after the first.
func (c *Client) Reconnects() int64 { return c.reconnects.Load() }

// Close ends every call and subscription and closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	s := c.sess
	c.mu.Unlock()
	if c.local != nil && s != nil && s.alive() {
		// The agent should count what was decided locally: report it
		// before the connection goes.
		ctx, cancel := context.WithTimeout(c.ctx, localFlushTimeout)
		c.local.flushOn(ctx, s)
		cancel()
	}
	c.mu.Lock()
	c.sess = nil
	c.mu.Unlock()
	c.cancel()
	if s != nil {
		s.close(wire.CodeOK, "client closed")
	}
	return nil
}

// session returns the live session, dialling one (with backoff after a
// failure) when there is none. Concurrent callers share one dial.
func (c *Client) session(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if s := c.sess; s != nil && s.alive() {
			c.mu.Unlock()
			return s, nil
		}
		if wait := c.dialing; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if old := c.sess; old != nil {
			old.close(wire.CodeOK, "replaced after a failure")
		}
		done := make(chan struct{})
		c.dialing = done
		delay := time.Until(c.nextTry)
		hadSession := c.sess != nil
		c.mu.Unlock()

		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				c.finishDial(done, nil, nil)
				return nil, ctx.Err()
			case <-c.ctx.Done():
				t.Stop()
				c.finishDial(done, nil, ErrClosed)
				return nil, ErrClosed
			}
		}
		s, err := c.dial(ctx)
		c.finishDial(done, s, err)
		if err != nil {
			return nil, err
		}
		if hadSession {
			c.reconnects.Add(1)
		}
		return s, nil
	}
}

func (c *Client) finishDial(done chan struct{}, s *session, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dialing = nil
	close(done)
	switch {
	case s != nil:
		if c.closed {
			s.close(wire.CodeOK, "client closed")
			return
		}
		c.sess, c.backoff, c.nextTry = s, 0, time.Time{}
	case err != nil:
		// Exponential backoff with a cap, so a dead agent is not hammered.
		if c.backoff == 0 {
			c.backoff = c.cfg.MinBackoff
		} else {
			c.backoff = min(2*c.backoff, c.cfg.MaxBackoff)
		}
		c.nextTry = time.Now().Add(c.backoff)
	}
}

func (c *Client) dial(ctx context.Context) (*session, error) {
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return nil, fmt.Errorf("%w: address %q: %v", ErrBadConfig, c.addr, err)
	}
	tc := c.cfg.TLSConfig(host, wire.ALPNNative)
	qc := &quic.Config{
		MaxIdleTimeout:       c.cfg.IdleTimeout,
		KeepAlivePeriod:      c.cfg.KeepAlive,
		EnableDatagrams:      true,
		HandshakeIdleTimeout: c.cfg.DialTimeout,
	}
	var conn *quic.Conn
	if c.cfg.Transport != nil {
		ua, rerr := net.ResolveUDPAddr("udp", c.addr)
		if rerr != nil {
			return nil, fmt.Errorf("resolving %s: %w", c.addr, rerr)
		}
		conn, err = c.cfg.Transport.Dial(dctx, ua, tc, qc)
	} else {
		conn, err = quic.DialAddr(dctx, c.addr, tc, qc)
	}
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", c.addr, asServerError(err))
	}
	s, err := newSession(dctx, c, conn)
	if err != nil {
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeOK), "hello failed")
		return nil, err
	}
	return s, nil
}

// asServerError turns a QUIC application error from the agent into a
// ServerError (so errors.Is(err, ErrUnauthenticated) works).
func asServerError(err error) error {
	var ae *quic.ApplicationError
	if errors.As(err, &ae) && ae.Remote {
		return fmt.Errorf("%w (%w)", &ServerError{Code: wire.Code(ae.ErrorCode), Reason: ae.ErrorMessage}, err)
	}
	var se *quic.StreamError
	if errors.As(err, &se) && se.Remote {
		return fmt.Errorf("%w (%w)", &ServerError{Code: wire.Code(se.ErrorCode), Reason: "stream reset"}, err)
	}
	return err
}

// retryable says whether a call failed because its connection went away, so
// that the same call on a new connection may succeed.
func retryable(err error) bool {
	var se *ServerError
	if errors.As(err, &se) {
		return se.Code == wire.CodeShutdown || se.Code == wire.CodeIdle
	}
	return errors.Is(err, errSessionDead) || errors.Is(err, net.ErrClosed)
}

// Decide asks for one decision per task. On a broken connection it
// reconnects and retries once.
//
// A task's id is its TaskId, an opaque string of 1..wire.MaxTaskIDBytes
// bytes (a request id, a UUID); the numeric Id of the first schema is still
// taken when TaskId is empty (wire.TaskID has the rule). Each decision
// carries the id back in the field(s) it was sent in; wire.TaskID(decision)
// is the id either way. An id over the limit fails here, before anything
// is sent (wire.ErrBadTaskID).
//
// With Config.LocalDecisions, a call whose every task the current decision
// table answers is decided locally (its decisions carry no Q-values; the
// response names the table's model and node-state epoch); otherwise the
// whole call goes to the agent.
func (c *Client) Decide(ctx context.Context, tasks []*wire.Task) (*wire.DecideResponse, error) {
	for i, t := range tasks {
		if err := wire.CheckTaskID(t); err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
	}
	if resp := c.decideFromTable(tasks); resp != nil {
		return resp, nil
	}
	return c.decideRemote(ctx, tasks)
}

// DecideRemote is Decide by a call to the agent, whether or not a table
// could answer.
func (c *Client) DecideRemote(ctx context.Context, tasks []*wire.Task) (*wire.DecideResponse, error) {
	for i, t := range tasks {
		if err := wire.CheckTaskID(t); err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
	}
	return c.decideRemote(ctx, tasks)
}

func (c *Client) decideRemote(ctx context.Context, tasks []*wire.Task) (*wire.DecideResponse, error) {
	req := &wire.Envelope{Body: &wire.Envelope_DecideRequest{DecideRequest: &wire.DecideRequest{ReqId: c.reqID.Add(1), Tasks: tasks}}}
	env, err := c.call(ctx, req, req.GetDecideRequest().GetReqId())
	if err != nil {
		return nil, err
	}
	resp := env.GetDecideResponse()
	if resp == nil {
		return nil, fmt.Errorf("%w: answer to decide is %T", wire.ErrMalformed, env.GetBody())
	}
	if len(resp.GetDecisions()) != len(tasks) {
		return nil, fmt.Errorf("%w: %d decisions for %d tasks", wire.ErrMalformed, len(resp.GetDecisions()), len(tasks))
	}
	c.remoteTasks.Add(int64(len(tasks)))
	c.reserve.offer(resp.GetBackgroundReserve(), resp.GetBackgroundShortMs(), resp.GetBackgroundUrgentSlaMs())
	if c.local != nil {
		c.local.remote.Add(int64(len(tasks)))
	}
	return resp, nil
}

// ReportOutcomes reports finished tasks and returns how many the agent
// accepted. An outcome names its task as the task was named (TaskId, or
// the numeric Id).
//
// With Config.LocalDecisions, the local decisions made before the call are
// reported first, so the agent knows every task an outcome names.
func (c *Client) ReportOutcomes(ctx context.Context, outcomes []*wire.Outcome) (int, error) {
	for i, o := range outcomes {
		if err := wire.CheckTaskID(o); err != nil {
			return 0, fmt.Errorf("outcome %d: %w", i, err)
		}
	}
	if c.local != nil {
		c.local.flush(ctx)
		// Counted before the call: the queue estimate takes the tasks
		// off as soon as their outcomes are on their way.
		c.local.outcomes.Add(int64(len(outcomes)))
	}
	id := c.reqID.Add(1)
	req := &wire.Envelope{Body: &wire.Envelope_OutcomeReport{OutcomeReport: &wire.OutcomeReport{ReqId: id, Outcomes: outcomes}}}
	env, err := c.call(ctx, req, id)
	if c.local != nil {
		if err != nil {
			c.local.outcomes.Add(-int64(len(outcomes))) // the agent still counts them
		} else {
			c.local.outAcked.Add(int64(len(outcomes)))
		}
	}
	if err != nil {
		return 0, err
	}
	acc := env.GetOutcomeAccepted()
	if acc == nil {
		return 0, fmt.Errorf("%w: answer to outcomes is %T", wire.ErrMalformed, env.GetBody())
	}
	return int(acc.GetAccepted()), nil
}

func (c *Client) call(ctx context.Context, req *wire.Envelope, id uint64) (*wire.Envelope, error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			if lastErr != nil {
				return nil, fmt.Errorf("%w (after %w)", err, lastErr)
			}
			return nil, err
		}
		env, err := s.roundTrip(ctx, req, id)
		if err == nil {
			if e := env.GetError(); e != nil {
				return nil, serverError(e)
			}
			return env, nil
		}
		if !retryable(err) || ctx.Err() != nil {
			return nil, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// codecOpts are the codec options both framers of a stream use.
func (c *Client) codecOpts() []codec.Option {
	return append(wire.CallOptions(), codec.WithMaxSize(c.cfg.MaxFrameBytes))
}
