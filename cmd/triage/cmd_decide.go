package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

func init() {
	register("decide", "ask an agent for task priorities (tasks from flags or JSON on stdin)", runDecide)
}

// maxDecideInput bounds the JSON read from stdin (the agent's default body limit).
const maxDecideInput = 1 << 20

func runDecide(args []string) error {
	fs := newFlagSet("decide", "send task descriptors to an agent over triage/1 and print its decisions.\n"+
		"Without --id, reads {\"tasks\":[{\"id\":\"task-1\",\"class\":\"...\",\"sla_ms\":50,\"cost_ms\":5,\"tenant\":\"...\"}]} from stdin\n"+
		"(an id is a string of 1..128 bytes, or a number).")
	addr := fs.String("addr", "127.0.0.1:4433", "agent QUIC address (host:port)")
	id := fs.String("id", "", `task id, 1..128 bytes (one task from flags; "" reads JSON tasks from stdin)`)
	class := fs.String("class", "", "task class")
	slaMs := fs.Float64("sla-ms", 0, "task latency objective, milliseconds")
	costMs := fs.Float64("cost-ms", 0, "expected task cost, milliseconds (0 unknown)")
	tenant := fs.String("tenant", "", "tenant")
	asJSON := fs.Bool("json", false, "print the answer as JSON (the /v1/decide shape)")
	insecure := fs.Bool("insecure", false, "accept any server certificate (testing only)")
	caFile := fs.String("ca", "", "PEM file of CA certificates to verify the agent with")
	pin := fs.String("pin-sha256", "", "hex SHA-256 of the agent's certificate (printed by triage agent)")
	token := fs.String("token", "", "bearer token, when the agent requires one")
	certFile := fs.String("cert", "", "client certificate (PEM) for agents started with --client-ca")
	keyFile := fs.String("key", "", "client key (PEM) for --cert")
	serverName := fs.String("server-name", "", "TLS server name (default the host of --addr)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	var tasks []*wire.Task
	if *id != "" {
		t, err := taskFromFlag(*id)
		if err != nil {
			return err
		}
		t.Class, t.SlaMs, t.CostMs, t.Tenant = *class, float32(*slaMs), float32(*costMs), *tenant
		tasks = []*wire.Task{t}
	} else {
		var err error
		if tasks, err = readTasksJSON(os.Stdin); err != nil {
			return err
		}
	}
	cfg := client.Config{PinSHA256: *pin, InsecureSkipVerify: *insecure, Token: *token, ServerName: *serverName, DialTimeout: *timeout, Streams: 1}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return fmt.Errorf("reading --ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--ca %s: no PEM certificate in it", *caFile)
		}
	}
	if *certFile != "" || *keyFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return fmt.Errorf("loading --cert/--key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c, err := client.Dial(ctx, *addr, cfg)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", *addr, err)
	}
	defer c.Close()
	resp, err := c.Decide(ctx, tasks)
	if err != nil {
		return fmt.Errorf("deciding: %w", err)
	}
	out := wire.DecideResponseJSON{Decisions: wire.DecisionsToJSON(resp.GetDecisions()), Model: resp.GetModel(), StateEpoch: resp.GetStateEpoch()}
	if *asJSON {
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
		return nil
	}
	printDecisions(os.Stdout, tasks, out)
	return nil
}

// taskFromFlag is a task with the --id given: a number in its canonical
// decimal form goes as the numeric id (and comes back as a number in
// --json), anything else as the string id.
func taskFromFlag(id string) (*wire.Task, error) {
	if n, err := strconv.ParseUint(id, 10, 64); err == nil && strconv.FormatUint(n, 10) == id {
		return &wire.Task{Id: n}, nil
	}
	t := &wire.Task{TaskId: id}
	if err := wire.CheckTaskID(t); err != nil {
		return nil, fmt.Errorf("--id: %w", err)
	}
	return t, nil
}

// readTasksJSON reads a /v1/decide body, strictly and bounded.
func readTasksJSON(r io.Reader) ([]*wire.Task, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDecideInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading tasks from stdin: %w", err)
	}
	if len(data) > maxDecideInput {
		return nil, fmt.Errorf("tasks on stdin: more than %d bytes", maxDecideInput)
	}
	var req wire.DecideRequestJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New(`no tasks: give --id (and --class, --sla-ms, ...) or JSON {"tasks":[...]} on stdin`)
		}
		return nil, fmt.Errorf(`tasks on stdin are not {"tasks":[{"id","class","sla_ms","cost_ms","tenant"}]}: %w`, err)
	}
	if len(req.Tasks) == 0 {
		return nil, errors.New("tasks on stdin: the list is empty")
	}
	tasks, err := wire.TasksFromJSON(req.Tasks)
	if err != nil {
		return nil, fmt.Errorf("tasks on stdin: %w", err)
	}
	return tasks, nil
}

func printDecisions(w io.Writer, tasks []*wire.Task, out wire.DecideResponseJSON) {
	fmt.Fprintf(w, "model %s, node state epoch %d\n", out.Model, out.StateEpoch)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "id\tclass\tsla_ms\tpriority\tq0\tq1\tq2\tq3\tq4\t")
	for i, d := range out.Decisions {
		t := tasks[i]
		fmt.Fprintf(tw, "%s\t%s\t%g\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", d.ID.ID, t.GetClass(), t.GetSlaMs(), d.Priority, d.Q[0], d.Q[1], d.Q[2], d.Q[3], d.Q[4])
	}
	tw.Flush()
}
