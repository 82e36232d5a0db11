package main

// The shared flag helper of every subcommand. A flag's value comes, in this
// order of precedence, from
//
//  1. the command line (--quic-addr :4433),
//  2. the environment (TRIAGE_QUIC_ADDR=:4433: upper case, dashes to underscores),
//  3. the YAML file named by --config (or TRIAGE_CONFIG), keyed by flag name
//     (quic-addr: ":4433"; quic_addr is accepted too),
//  4. the flag's default.
//
// Usage in a subcommand:
//
//	fs := newFlagSet("agent", "run the node agent")
//	addr := fs.String("quic-addr", ":4433", "UDP address of the QUIC endpoint")
//	if done, err := parseCommandFlags(fs, args); done {
//		return err
//	}

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/triage-agent/triage/train"
)

// envPrefix prefixes every flag's environment variable.
const envPrefix = "TRIAGE_"

// configFlagName is the flag that names the YAML file.
const configFlagName = "config"

// maxConfigBytes bounds the YAML file: a config is a few hundred bytes, and a
// mistaken path to a huge file must not be read into memory.
const maxConfigBytes = 1 << 20

// ErrBadConfig reports a YAML config file that cannot be used: unreadable,
// not YAML, a key that names no flag, or a value no flag accepts.
var ErrBadConfig = errors.New("config file")

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// newFlagSet returns a flag set for one subcommand whose --help lists every
// flag with its default and its environment variable.
func newFlagSet(name, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet("triage "+name, flag.ContinueOnError)
	fs.Usage = func() { printUsage(fs.Output(), fs, summary) }
	return fs
}

// addConfigFlag adds --config FILE to fs.
func addConfigFlag(fs *flag.FlagSet) *string {
	return fs.String(configFlagName, "", "YAML file of flag values, keyed by flag name (flags and TRIAGE_* override it)")
}

// parseFlags parses args, then fills every flag not given on the command line
// from the environment and then from the --config file.
func parseFlags(fs *flag.FlagSet, args []string) error {
	return parseFlagsFrom(fs, args, os.LookupEnv, os.ReadFile)
}

// parseCommandFlags ends the flags of a command that takes a config file:
// it adds --config (addConfigFlag) and parses args (parseFlags). done is
// true when the command is to return err at once: after a bad flag, or
// after --help, whose usage is printed and which is no failure (err nil).
func parseCommandFlags(fs *flag.FlagSet, args []string) (done bool, err error) {
	addConfigFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return true, helpIsNotAnError(err)
	}
	return false, nil
}

// helpIsNotAnError turns the --help request into a clean exit.
func helpIsNotAnError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// parseFlagsFrom is parseFlags with the environment and file system injected,
// so tests need not touch the process environment.
func parseFlagsFrom(fs *flag.FlagSet, args []string, lookupEnv func(string) (string, bool), readFile func(string) ([]byte, error)) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	fromCLI := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { fromCLI[f.Name] = true })

	var firstErr error
	fromEnv := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if fromCLI[f.Name] || firstErr != nil {
			return
		}
		v, ok := lookupEnv(envName(f.Name))
		if !ok {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			firstErr = fmt.Errorf("%s=%q: %w", envName(f.Name), v, err)
			return
		}
		fromEnv[f.Name] = true
	})
	if firstErr != nil {
		return firstErr
	}

	cf := fs.Lookup(configFlagName)
	if cf == nil || cf.Value.String() == "" {
		return nil
	}
	path := cf.Value.String()
	data, err := readFile(path)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrBadConfig, path, err)
	}
	values, err := parseConfigYAML(data)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrBadConfig, path, err)
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic error for several bad keys
	for _, key := range keys {
		name := strings.ReplaceAll(key, "_", "-")
		f := fs.Lookup(name)
		if f == nil || name == configFlagName {
			return fmt.Errorf("%w %s: key %q names no flag of %s", ErrBadConfig, path, key, fs.Name())
		}
		if fromCLI[name] || fromEnv[name] {
			continue
		}
		if err := fs.Set(name, values[key]); err != nil {
			return fmt.Errorf("%w %s: %s: %q: %w", ErrBadConfig, path, key, values[key], err)
		}
	}
	return nil
}

// parseConfigYAML reads a flat YAML mapping of flag names to scalars. Lists
// become comma-separated values (the form list flags take on the command line).
func parseConfigYAML(data []byte) (map[string]string, error) {
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d a config may have", len(data), maxConfigBytes)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		s, err := scalarString(v)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		out[k] = s
	}
	return out, nil
}

func scalarString(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalarString(e)
			if err != nil {
				return "", err
			}
			if _, nested := e.([]any); nested {
				return "", errors.New("nested lists are not flag values")
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	default:
		return "", fmt.Errorf("a %T is not a flag value (use a scalar or a list)", v)
	}
}

// printUsage lists every flag with its type, default and environment variable.
func printUsage(w io.Writer, fs *flag.FlagSet, summary string) {
	fmt.Fprintf(w, "usage: %s [flags]\n", fs.Name())
	if summary != "" {
		fmt.Fprintf(w, "\n%s\n", summary)
	}
	fmt.Fprintf(w, "\nEach flag can also be set from the environment (shown) or, if the command has --config, from a YAML file keyed by flag name. Precedence: flag > environment > config file > default.\n\nflags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if typ != "" {
			line += " " + typ
		}
		fmt.Fprintf(w, "%s\n    \t%s\n    \tdefault: %s; env: %s\n", line, usage, defaultText(f), envName(f.Name))
	})
}

func defaultText(f *flag.Flag) string {
	if f.DefValue == "" {
		return `""`
	}
	return f.DefValue
}

// parseAblate reads an --ablate flag of eval, the agent or bench e2e:
// "kernel" (every kernel feature at its neutral value) or "" (none).
func parseAblate(v string) (kernel bool, err error) {
	switch v {
	case "":
		return false, nil
	case "kernel":
		return true, nil
	}
	return false, fmt.Errorf("--ablate %q: the only ablation is kernel", v)
}

// parseGenWorkers reads a --gen-workers flag of eval and train: the worker
// counts generated scenarios draw their nodes from, comma-separated ("":
// the default suite's, train.DefaultGenWorkers).
func parseGenWorkers(v string) (train.GenConfig, error) {
	var cfg train.GenConfig
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		w, err := strconv.Atoi(f)
		if err != nil {
			return cfg, fmt.Errorf("--gen-workers %q: %q is not a whole number of workers", v, f)
		}
		cfg.Workers = append(cfg.Workers, w)
		if len(cfg.Workers) > train.MaxGenWorkerChoices {
			break // Validate refuses the list; stop reading it
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("--gen-workers %q: %w", v, err)
	}
	return cfg, nil
}

// genWorkersNote names a --gen-workers list for a report: "" for the
// default suite's.
func genWorkersNote(cfg train.GenConfig) string {
	if len(cfg.Workers) == 0 {
		return ""
	}
	return fmt.Sprintf(", workers %v", cfg.Workers)
}
