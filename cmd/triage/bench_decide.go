package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/triage-agent/triage/internal/bench/decide"
)

func init() { registerBench("decide", runBenchDecide) }

// runBenchDecide measures the decide call over the native protocol, HTTP/3
// JSON, gRPC over TCP (its own transport, and the agent's TCP port), and
// JSON over HTTP/2 and HTTP/1.1 on that port (TLS 1.3 for all), side by
// side in one run
// (internal/bench/decide), with the model the agent serves (ONNX Runtime,
// the default) or the plain Go forward pass of the same weights
// (--decider go).
func runBenchDecide(args []string) error {
	fs, asJSON := newBenchFlagSet("decide", "decide over triage/1, HTTP/3 JSON, gRPC (standalone and on the agent's TCP port) and JSON over HTTP/2 and HTTP/1.1 on loopback, side by side")
	clients := fs.Int("clients", 4, "concurrent clients (one connection each) per protocol")
	duration := fs.Duration("duration", 2e9, "measured time per cell")
	rate := fs.Int("rate", 5000, "total requests/s of the paced batch-1 cells")
	batches := fs.String("batches", "1,64", "comma-separated batch sizes (1 is paced at --rate, others closed-loop)")
	protocols := fs.String("protocols", strings.Join(decide.ProtocolOrder, ","), "comma-separated subset of "+strings.Join(decide.ProtocolOrder, ","))
	decider := fs.String("decider", "ort", "ort (the embedded model through ONNX Runtime, as the agent serves) or go (its plain Go forward pass)")
	ortLib := fs.String("onnxruntime-lib", "", "ONNX Runtime shared library (default: $TRIAGE_ONNXRUNTIME_LIB, then the cache)")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	opts := decide.Options{Clients: *clients, Duration: *duration, Rate: *rate}
	d, closeDecider, err := decide.OpenDecider(*decider, *ortLib)
	if err != nil {
		return err
	}
	defer closeDecider()
	opts.Decider = d
	for _, b := range strings.Split(*batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil {
			return fmt.Errorf("--batches: %q is not a number", b)
		}
		opts.Batches = append(opts.Batches, n)
	}
	for _, p := range strings.Split(*protocols, ",") {
		opts.Protocols = append(opts.Protocols, strings.TrimSpace(p))
	}
	fmt.Printf("bench decide: %d clients per protocol, %s per cell, batch 1 paced at %d req/s; GOMAXPROCS=%d, %s\n",
		opts.Clients, opts.Duration, opts.Rate, runtime.GOMAXPROCS(0), runtime.Version())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tbatch\tmode\treq/s\tdecisions/s\tp50 µs\tp99 µs\tmax µs\tbytes/call\terrors\t")
	res, err := decide.Run(context.Background(), opts, func(c decide.Cell) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t\n", c.Protocol, c.Batch, c.Mode, c.RequestsPerSec, c.DecisionsPerS, c.P50Us, c.P99Us, c.MaxUs, c.BytesPerCall, c.Errors)
		tw.Flush()
	})
	if err != nil {
		return err
	}
	fmt.Printf("model %s through %s; TLS 1.3 everywhere (grpc: gRPC's own server; grpc-agent, http2, http1: the agent's TCP port)\n", res.Model, res.Decider)
	if *asJSON {
		return printJSONLine(os.Stdout, res)
	}
	return nil
}
