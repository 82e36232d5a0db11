// Package decide is `triage bench decide`: an agent endpoint (QUIC: native
// and HTTP/3; TCP: JSON over HTTP/1.1 and HTTP/2, and gRPC), a standalone
// gRPC server on the same call path, and N clients of each protocol in one
// process over loopback, measured side by side in one run.
package decide

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/internal/bench/measure"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
	"github.com/triage-agent/triage/wire"
)

// Options bound the run. The zero value runs the default matrix.
type Options struct {
	Clients   int           // concurrent clients (connections) per protocol; default 4
	Duration  time.Duration // measured time per cell; default 2s
	Warmup    time.Duration // unmeasured time per cell; default 300ms
	Rate      int           // total requests/s of the paced batch-1 cells; default 5000
	Batches   []int         // default {1, 64}; batch 1 is paced at Rate, larger ones run closed-loop
	InFlight  int           // concurrent calls per connection in the closed-loop cells; default 4
	Protocols []string      // subset of ProtocolOrder; default all
	Decider   policy.Decider
	Logger    *slog.Logger
}

// Cell is one protocol × batch measurement.
type Cell struct {
	Protocol       string  `json:"protocol"`
	Batch          int     `json:"batch"`
	Clients        int     `json:"clients"`
	InFlight       int     `json:"in_flight"` // concurrent calls per connection
	Mode           string  `json:"mode"`      // "paced" (open loop at target_rps) or "closed" (as fast as answers come)
	TargetRPS      int     `json:"target_rps,omitempty"`
	Requests       int64   `json:"requests"`
	Errors         int64   `json:"errors"`
	RequestsPerSec float64 `json:"requests_per_s"`
	DecisionsPerS  float64 `json:"decisions_per_s"`
	P50Us          float64 `json:"p50_us"`
	P99Us          float64 `json:"p99_us"`
	MaxUs          float64 `json:"max_us"`
	BytesPerCall   float64 `json:"bytes_per_call"`
}

// Result is the whole run.
type Result struct {
	Model    string `json:"model"`
	Decider  string `json:"decider"`
	Cells    []Cell `json:"cells"`
	Duration string `json:"duration_per_cell"`
}

var factories = map[string]func(context.Context, env, *byteCounter) (caller, error){
	"native": newNative, "h3": newH3, "grpc": newGRPC,
	"http1": newTCPJSON("http/1.1"), "http2": newTCPJSON("h2"), "grpc-agent": newGRPCAgent,
}

// quicProtocols are the protocols over QUIC, whose bytes the agent's end counts.
var quicProtocols = map[string]bool{"native": true, "h3": true}

// ProtocolOrder is the order cells are run and printed in: the QUIC
// protocols, gRPC with its own transport, then what the agent's TCP port
// serves (gRPC sharing HTTP/2 with JSON, JSON over HTTP/2 and HTTP/1.1).
var ProtocolOrder = []string{"native", "h3", "grpc", "grpc-agent", "http2", "http1"}

func (o *Options) defaults() error {
	if o.Clients <= 0 {
		o.Clients = 4
	}
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = 300 * time.Millisecond
	}
	if o.Rate <= 0 {
		o.Rate = 5000
	}
	if o.InFlight <= 0 {
		o.InFlight = 4
	}
	if len(o.Batches) == 0 {
		o.Batches = []int{1, 64}
	}
	if len(o.Protocols) == 0 {
		o.Protocols = ProtocolOrder
	}
	for _, p := range o.Protocols {
		if factories[p] == nil {
			return fmt.Errorf("unknown protocol %q (have %s)", p, strings.Join(ProtocolOrder, ", "))
		}
	}
	for _, b := range o.Batches {
		if b < 1 || b > 1024 {
			return fmt.Errorf("batch %d not in 1..1024", b)
		}
	}
	if o.Clients > 256 || o.InFlight > 64 || o.Duration > 5*time.Minute {
		return errors.New("bench bounded to 256 clients and 5 minutes per cell")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Decider == nil {
		m, meta, err := policy.ReadONNX(defaultmodel.Bytes())
		if err != nil {
			return fmt.Errorf("reading the default model: %w", err)
		}
		o.Decider = policy.NewGoDecider(m, meta)
	}
	return nil
}

// Run starts the servers, runs every cell and stops everything.
func Run(ctx context.Context, o Options, progress func(Cell)) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	be := backend.NewPolicy(o.Decider, &wire.NodeState{
		Epoch: 1, Features: append([]float32(nil), policy.Neutral[:]...), Model: o.Decider.Version(), Node: "bench",
	})
	srv, err := serve.New(serve.Config{Addr: "127.0.0.1:0", Logger: o.Logger, MaxConnsPerIP: 4 * o.Clients}, be)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	go srv.Serve()

	gs := srv.StandaloneGRPC()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gRPC listener: %w", err)
	}
	go gs.Serve(ln)
	defer gs.Stop()

	e := env{quicAddr: srv.Addr().String(), tcpAddr: srv.TCPAddr().String(), grpcAddr: ln.Addr().String(),
		ccfg: client.Config{PinSHA256: srv.Fingerprint(), Logger: o.Logger}, quicBytes: srv.QUICBytes}
	res := &Result{Model: o.Decider.Version(), Decider: fmt.Sprintf("%T", o.Decider), Duration: o.Duration.String()}
	for _, batch := range o.Batches {
		for _, p := range o.Protocols {
			cell, err := runCell(ctx, e, p, batch, o)
			if err != nil {
				return res, fmt.Errorf("%s batch %d: %w", p, batch, err)
			}
			res.Cells = append(res.Cells, cell)
			if progress != nil {
				progress(cell)
			}
		}
	}
	return res, nil
}

func runCell(ctx context.Context, e env, proto string, batch int, o Options) (Cell, error) {
	cell := Cell{Protocol: proto, Batch: batch, Clients: o.Clients, Mode: "closed", InFlight: o.InFlight}
	paced := batch == 1
	if paced {
		cell.Mode, cell.TargetRPS, cell.InFlight = "paced", o.Rate, 1
	}
	counters := make([]*byteCounter, o.Clients)
	callers := make([]caller, o.Clients)
	for i := range callers {
		counters[i] = &byteCounter{}
		c, err := factories[proto](ctx, e, counters[i])
		if err != nil {
			for _, c := range callers[:i] {
				c.close()
			}
			return cell, fmt.Errorf("connecting client %d: %w", i, err)
		}
		callers[i] = c
	}
	defer func() {
		for _, c := range callers {
			c.close()
		}
	}()
	// bytesNow is the cell's bytes on the wire so far, both ways.
	bytesNow := func() int64 {
		var n int64
		for _, c := range counters {
			n += c.load()
		}
		return n
	}
	if quicProtocols[proto] {
		bytesNow = e.quicBytes
	}
	var bytes0 atomic.Int64
	tasks := benchTasks(batch)
	interval := time.Duration(0)
	if paced {
		interval = time.Duration(float64(time.Second) * float64(o.Clients) / float64(o.Rate))
	}
	type perClient struct {
		lat      []time.Duration
		reqs     int64
		errs     int64
		lastErr  error
		decision int64
	}
	workers := o.Clients * cell.InFlight
	stats := make([]perClient, workers)
	var wg sync.WaitGroup
	start := time.Now()
	measureFrom := start.Add(o.Warmup)
	end := measureFrom.Add(o.Duration)
	for i := 0; i < workers; i++ {
		c := callers[i%o.Clients]
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &stats[i]
			st.lat = make([]time.Duration, 0, 1<<14)
			measuring := false
			// Stagger the paced clients so their sends interleave.
			next := start.Add(time.Duration(i) * interval / time.Duration(workers))
			for {
				now := time.Now()
				if now.After(end) {
					return
				}
				if !measuring && now.After(measureFrom) {
					measuring = true
					if i == 0 {
						bytes0.Store(bytesNow())
					}
				}
				if paced {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					next = next.Add(interval)
				}
				t0 := time.Now()
				n, err := c.decide(ctx, tasks)
				lat := time.Since(t0)
				if !measuring {
					continue
				}
				if err != nil {
					st.errs++
					st.lastErr = err
					continue
				}
				st.reqs++
				st.decision += int64(n)
				if len(st.lat) < 1<<22 {
					st.lat = append(st.lat, lat)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(measureFrom).Seconds()
	bytes := bytesNow() - bytes0.Load()
	var all []time.Duration
	for i := range stats {
		st := &stats[i]
		all = append(all, st.lat...)
		cell.Requests += st.reqs
		cell.Errors += st.errs
		cell.DecisionsPerS += float64(st.decision)
		if st.lastErr != nil {
			o.Logger.Warn("bench call failed", "protocol", proto, "err", st.lastErr)
		}
	}
	if cell.Requests == 0 {
		return cell, fmt.Errorf("no successful call (%d errors)", cell.Errors)
	}
	slices.Sort(all)
	cell.RequestsPerSec = float64(cell.Requests) / elapsed
	cell.DecisionsPerS /= elapsed
	cell.P50Us = us(measure.Quantile(all, 0.50))
	cell.P99Us = us(measure.Quantile(all, 0.99))
	cell.MaxUs = us(all[len(all)-1])
	cell.BytesPerCall = float64(bytes) / float64(cell.Requests)
	return cell, nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func benchTasks(n int) []*wire.Task {
	classes := []string{"interactive", "batch", "ml-inference", "etl"}
	out := make([]*wire.Task, n)
	for i := range out {
		out[i] = &wire.Task{Id: uint64(100000 + i), Class: classes[i%len(classes)], SlaMs: float32(5 + 10*(i%20)), CostMs: float32(1 + i%9), Tenant: "tenant-a"}
	}
	return out
}
