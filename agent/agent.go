package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/agent/access"
	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/flamegraph"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/wire"
)

// Agent is a running daemon. New builds and binds everything; Run serves
// until its context ends; Close releases what New took.
type Agent struct {
	cfg Config
	log *slog.Logger

	model   *policy.Reloader
	guard   *guard.Guard // nil: the model's decisions are served as they are
	started time.Time    // zero of the guard's controller clock
	shadow  *shadowEval
	batch   *batcher
	tracker *tracker         // the tasks in flight: feature 0 and the experience log
	table   *tableProducer   // the decision tables of local decisions
	asm     *state.Assembler // the state vectors and the class statistics
	signals NodeSignals
	node    atomic.Pointer[nodeSnapshot]
	epoch   atomic.Uint64
	// refresh asks the state loop for a node snapshot now, ahead of its
	// tick (observeLevel); it holds one request.
	refresh chan struct{}
	exp     *experience.Writer
	store   *flamegraph.Store
	prof    profiler
	// windowProcs gives each flame-graph window more Ps (Config.WindowMaxProcs).
	windowProcs windowProcs
	server      *serve.Server
	auth        *access.Tokens // the endpoint's and the admin port's tokens
	admin       *http.Server
	adminLn     net.Listener
	metrics     *metrics

	lastSwap  atomic.Int64 // unix nanos of the last model swap
	expErrLog atomic.Int64 // unix nanos of the last logged experience error
	ready     atomic.Bool
	closeOnce sync.Once
	runCancel context.CancelFunc
	wg        sync.WaitGroup
}

// nodeSnapshot is the node part of every state vector, refreshed every
// StateInterval so that deciding a task reads memory, not the kernel.
type nodeSnapshot struct {
	signals  signals.Snapshot // the kernel signals it was read from (probe states)
	inputs   policy.Inputs    // the node part of every task's inputs
	features state.Features   // the node's own vector with each feature's source
	wire     *wire.NodeState
	// foregroundGone is whether no foreground task had been decided for
	// policy.ForegroundGoneMs when it was taken: its reserve may be
	// released or bounded, and the next foreground decision asks for a new
	// snapshot (observeLevel).
	foregroundGone bool
}

// profiler is what the agent needs of the flame-graph recorder.
type profiler interface {
	Run(ctx context.Context, store *flamegraph.Store, interval time.Duration) error
	// UnwindFallbacks counts samples partly walked by frame pointer where
	// unwind tables were wanted, per reason, since the start.
	UnwindFallbacks() map[string]uint64
	// SymbolCacheBytes is the symboliser's cache now.
	SymbolCacheBytes() int
	// KernelSymbolReads counts the reads of /proc/kallsyms: at start, then
	// for windows holding kernel functions not named before.
	KernelSymbolReads() uint64
	Close() error
}

// Run builds an agent from cfg and serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	a, err := New(cfg)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// New loads the model, starts the node signals, opens the experience log and
// the flame-graph store, and binds the QUIC and admin ports. Nothing is
// served until Run.
func New(cfg Config) (a *Agent, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a = &Agent{
		cfg: cfg, log: cfg.Logger, tracker: newTracker(cfg.TaskTimeout, cfg.MaxPending),
		asm: state.NewAssembler(state.Config{Workers: cfg.Workers, BlindKernel: cfg.AblateKernel}), started: time.Now(),
		refresh: make(chan struct{}, 1),
	}
	built := a // the named result is nil on an error return
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	if cfg.AblateKernel {
		a.log.Warn("kernel features ablated: the policy decides without the kernel's signals (--ablate kernel, a measurement mode)")
	}
	if cfg.GoMemoryLimit > 0 {
		limit := applyGoMemoryLimit(cfg.GoMemoryLimit)
		a.log.Debug("Go memory limit", "bytes", limit, "from_environment", limit != cfg.GoMemoryLimit)
	}
	if cfg.MallocMmapThreshold > 0 {
		if set, err := applyMallocMmapThreshold(cfg.MallocMmapThreshold); err != nil {
			a.log.Warn("the C heap keeps glibc's dynamic mmap threshold", "err", err)
		} else {
			a.log.Debug("malloc mmap threshold", "bytes", cfg.MallocMmapThreshold, "from_environment", !set)
		}
	}
	if cfg.Nice != 0 {
		if err := applyNice(cfg.Nice); err != nil {
			a.log.Warn("the agent keeps its scheduling priority", "err", err)
		}
	}
	if cfg.SchedSlice > 0 {
		if err := applySchedSlice(cfg.SchedSlice); err != nil {
			a.log.Warn("the agent keeps the kernel's scheduling slice", "err", err)
		}
	}
	if cfg.MaxProcs > 0 {
		available := runtime.GOMAXPROCS(0) // the runtime's default, or the environment's
		procs := applyMaxProcs(cfg.MaxProcs)
		a.windowProcs = newWindowProcs(procs, available, cfg.WindowMaxProcs)
		a.log.Debug("GOMAXPROCS", "procs", procs, "from_environment", maxProcsFromEnvironment(), "window_procs", a.windowProcs.during)
	}
	a.metrics = newMetrics(a)
	a.table = newTableProducer(a, cfg.TableInterval, cfg.TableMaxCells)
	if a.guard, err = newGuard(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if a.auth, err = access.NewTokens(cfg.Tokens, cfg.TokenFile); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	a.auth.OnReload = func(err error) {
		if err != nil {
			a.metrics.tokenReloadFailures.Inc()
			a.log.Error("token file refused; the tokens in force stay", "path", cfg.TokenFile, "err", err)
			return
		}
		a.log.Info("token file reloaded", "path", cfg.TokenFile)
	}

	pcfg := policy.Config{Device: cfg.Device, LibraryPath: cfg.ORTLibrary, MaxBatch: ModelMaxBatch, Logger: cfg.Logger}
	var sess *policy.Session
	if cfg.ModelPath != "" {
		sess, err = policy.LoadFile(cfg.ModelPath, pcfg)
	} else {
		sess, err = policy.LoadBytes(defaultmodel.Bytes(), pcfg)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the model: %w", err)
	}
	a.model, err = policy.NewReloader(sess, pcfg,
		policy.OnSwap(func(old, new policy.Metadata) {
			a.lastSwap.Store(time.Now().UnixNano())
			a.log.Info("model swapped", "old", old.Version, "new", new.Version)
			a.metrics.modelChanged(new.Version, a.model.Device())
		}),
		policy.OnReloadError(func(path string, err error) {
			a.log.Error("model reload refused; the running model keeps serving", "path", path, "serving", a.model.Version(), "err", err)
			a.metrics.reloadFailures.Inc()
		}))
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("starting the model reloader: %w", err)
	}
	a.metrics.modelChanged(a.model.Version(), a.model.Device())
	a.metrics.buildInfo(policy.RuntimeVersion())
	if cfg.ShadowModelPath != "" {
		if a.shadow, err = newShadow(cfg.ShadowModelPath, pcfg, a.log); err != nil {
			return nil, err
		}
	}
	a.batch = newBatcher(a.model, cfg.BatchWindow, cfg.MaxBatch, a.metrics.observeBatch)

	a.signals = cfg.Signals
	if a.signals == nil {
		if a.signals, err = newNodeSignals(cfg); err != nil {
			return nil, err
		}
	}
	a.refreshNode(time.Now())

	if cfg.ExperienceDir != "" {
		opts := cfg.ExperienceOptions
		if opts.Logger == nil {
			opts.Logger = a.log
		}
		if a.exp, err = experience.Open(cfg.ExperienceDir, opts); err != nil {
			return nil, fmt.Errorf("opening the experience log: %w", err)
		}
	}
	if cfg.FlamegraphDir != "" {
		if a.store, err = flamegraph.NewStore(flamegraph.StoreConfig{Dir: cfg.FlamegraphDir, MaxBytes: cfg.FlamegraphMaxBytes}); err != nil {
			return nil, fmt.Errorf("opening the flame-graph store: %w", err)
		}
		if !cfg.NoEBPF {
			a.prof = newProfiler(a.log, cfg, a.windowProcs)
		}
	}

	scfg, err := a.serveConfig()
	if err != nil {
		return nil, err
	}
	if a.server, err = serve.New(scfg, a); err != nil {
		return nil, fmt.Errorf("starting the endpoint: %w", err)
	}
	a.metrics.reg.MustRegister(a.server.Collectors()...)
	if a.adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
		return nil, fmt.Errorf("listening for admin HTTP on %s: %w", cfg.AdminAddr, err)
	}
	if cfg.AdminTLS {
		a.adminLn = tls.NewListener(a.adminLn, a.server.TLSConfig([]string{"h2", "http/1.1"}, tls.VerifyClientCertIfGiven))
	}
	a.admin = &http.Server{Handler: a.adminAccess(a.adminHandler()), ReadHeaderTimeout: 5 * time.Second}
	return a, nil
}

// serveConfig is the endpoint's config; a TLS file that cannot be loaded
// is a bad config (checked here, at start, so that the agent refuses to
// start; the endpoint reads the files again whenever they change).
func (a *Agent) serveConfig() (serve.Config, error) {
	c := serve.Config{
		Addr: a.cfg.QUICAddr, TCPAddr: a.cfg.TCPAddr, DisableTCP: a.cfg.DisableTCP,
		Auth: a.auth, InsecureListenAny: a.cfg.InsecureListenAny, Logger: a.log,
		CertHosts: a.cfg.CertHosts, OnTLSReload: a.tlsReloaded,
		MaxConns: a.cfg.MaxConns, MaxConnsPerIP: a.cfg.MaxConnsPerIP, MaxNewConnsPerIP: a.cfg.MaxNewConnsPerIP,
		MaxStreamsPerConn: int64(a.cfg.MaxStreamsPerConn),
	}
	if a.cfg.TLSCertFile != "" {
		if _, err := serve.LoadCertificate(a.cfg.TLSCertFile, a.cfg.TLSKeyFile); err != nil {
			return c, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
		c.CertFile, c.KeyFile = a.cfg.TLSCertFile, a.cfg.TLSKeyFile
	}
	if a.cfg.ClientCAFile != "" {
		if _, err := serve.LoadClientCAs(a.cfg.ClientCAFile); err != nil {
			return c, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
		c.ClientCAFile = a.cfg.ClientCAFile
	}
	return c, nil
}

// tlsReloaded logs and counts a reload of the TLS files.
func (a *Agent) tlsReloaded(err error) {
	if err != nil {
		a.metrics.tlsReloadFailures.Inc()
		a.log.Error("TLS files refused; the certificate and client CA in force stay", "cert", a.cfg.TLSCertFile, "client_ca", a.cfg.ClientCAFile, "err", err)
		return
	}
	a.log.Info("TLS files reloaded", "cert", a.cfg.TLSCertFile, "client_ca", a.cfg.ClientCAFile, "fingerprint", a.server.Fingerprint())
}

// QUICAddr is the bound UDP address of the endpoint.
func (a *Agent) QUICAddr() net.Addr { return a.server.Addr() }

// TCPAddr is the bound TCP address of the endpoint (gRPC, JSON over
// HTTP/1.1 and HTTP/2), nil when it is off.
func (a *Agent) TCPAddr() net.Addr { return a.server.TCPAddr() }

// AdminAddr is the bound TCP address of the admin server.
func (a *Agent) AdminAddr() net.Addr { return a.adminLn.Addr() }

// Fingerprint is the hex SHA-256 of the endpoint's certificate, for pinning.
func (a *Agent) Fingerprint() string { return a.server.Fingerprint() }

// ModelVersion is the version of the model serving now.
func (a *Agent) ModelVersion() string { return a.model.Version() }

// Run serves QUIC and admin HTTP, refreshes the node state, watches the
// model file and records flame graphs until ctx ends, then closes the agent.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	a.runCancel = cancel
	defer a.Close()
	errc := make(chan error, 2)
	a.wg.Add(2)
	go func() {
		defer a.wg.Done()
		if err := a.server.Serve(); err != nil && !errors.Is(err, serve.ErrClosed) {
			errc <- fmt.Errorf("endpoint: %w", err)
		}
	}()
	go func() {
		defer a.wg.Done()
		if err := a.admin.Serve(a.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("admin HTTP: %w", err)
		}
	}()
	a.goLoop(ctx, a.stateLoop)
	if a.cfg.ModelPath != "" {
		a.goLoop(ctx, func(ctx context.Context) { a.model.Watch(ctx, a.cfg.ModelPath, a.cfg.ModelWatchInterval) })
	}
	if a.shadow != nil {
		a.goLoop(ctx, a.shadow.run)
	}
	if a.prof != nil {
		a.goLoop(ctx, func(ctx context.Context) {
			if err := a.prof.Run(ctx, a.store, a.cfg.FlamegraphInterval); err != nil {
				a.log.Warn("flame-graph recorder stopped", "err", err)
			}
		})
	}
	a.ready.Store(true)
	// What starting left goes back now, not at the first window a minute on.
	if released, err := returnFreeMemory(); err != nil {
		a.log.Warn("could not release the file pages mapped at start", "err", err)
	} else {
		a.log.Debug("released the file pages mapped at start", "bytes", released)
	}
	tcp := "off"
	if t := a.TCPAddr(); t != nil {
		tcp = t.String()
	}
	a.log.Info("triage agent serving",
		"quic", a.QUICAddr().String(), "tcp", tcp, "admin", a.AdminAddr().String(), "admin_tls", a.cfg.AdminTLS, "model", a.model.Version(),
		"device", a.model.Device(), "guard", a.cfg.Guard, "fingerprint", a.Fingerprint(), "experience", a.cfg.ExperienceDir,
		"flamegraphs", a.cfg.FlamegraphDir, "node", a.cfg.NodeName)
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

func (a *Agent) goLoop(ctx context.Context, f func(context.Context)) {
	a.wg.Add(1)
	go func() { defer a.wg.Done(); f(ctx) }()
}

// stateLoop refreshes the node snapshot and times out lost tasks; it
// refreshes the snapshot ahead of its tick when asked (observeLevel).
func (a *Agent) stateLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.StateInterval)
	defer t.Stop()
	var expired []*pendingTask
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.refresh:
			a.refreshNode(time.Now())
		case now := <-t.C:
			a.refreshNode(now)
			expired = a.tracker.expire(now, expired[:0])
			for _, p := range expired {
				a.timedOut(p, now)
			}
		}
	}
}

// Close stops serving and releases everything; safe to call more than once.
func (a *Agent) Close() error {
	var errs []error
	a.closeOnce.Do(func() {
		a.ready.Store(false)
		if a.runCancel != nil {
			a.runCancel()
		}
		if a.server != nil {
			a.server.Close()
		}
		if a.admin != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			a.admin.Shutdown(ctx)
			cancel()
		}
		if a.adminLn != nil {
			a.adminLn.Close() // Shutdown closes it only if Serve ran
		}
		a.wg.Wait()
		if a.batch != nil {
			a.batch.close()
		}
		if a.prof != nil {
			errs = append(errs, a.prof.Close())
		}
		if a.shadow != nil {
			errs = append(errs, a.shadow.close())
		}
		if a.exp != nil {
			errs = append(errs, a.exp.Close())
		}
		if a.signals != nil {
			errs = append(errs, a.signals.Close())
		}
		if a.model != nil {
			errs = append(errs, a.model.Close())
		}
	})
	return errors.Join(errs...)
}
