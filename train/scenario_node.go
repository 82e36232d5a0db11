package train

import "fmt"

// Format v2 of the scenario file: the node around the executor (see
// ../shared/scenarios/README.md). Every field is optional, and a v1 file
// (none of them) describes a node where each worker has a CPU to itself and
// nothing else runs, exactly as before.

// Limits on what an interference episode may ask for.
const (
	maxCPUs          = 4096
	maxEpisodes      = 256
	maxNeighbourLoad = 4096 // threads or writers in one episode
)

// Node is the machine the executor's workers run on.
type Node struct {
	// CPUs the workers share with everything else on the node; 0 means
	// one per worker (format v1).
	CPUs int `json:"cpus"`
}

// Interference kinds.
const (
	InterferenceCPU = "cpu" // always-runnable threads at the workers' nice value
	InterferenceIO  = "io"  // writers, each writing and fsync'ing 64 KiB in a loop
)

// Episode is one stretch of load from outside the executor.
type Episode struct {
	Kind    string  `json:"kind"`
	AtS     float64 `json:"at_s"`
	ForS    float64 `json:"for_s"`
	Threads int     `json:"threads,omitempty"` // kind "cpu"
	Writers int     `json:"writers,omitempty"` // kind "io"
}

// NodeCPUs is the number of CPUs the workers share: node.cpus, else one
// per worker.
func (sc *Scenario) NodeCPUs() int {
	if sc.Node != nil && sc.Node.CPUs > 0 {
		return sc.Node.CPUs
	}
	return sc.Workers
}

// DoesIO reports whether anything on the node writes to the disk: a class
// with an I/O share or an io interference episode.
func (sc *Scenario) DoesIO() bool {
	for i := range sc.Classes {
		if sc.Classes[i].IOShare > 0 {
			return true
		}
	}
	for _, e := range sc.Interference {
		if e.Writers > 0 {
			return true
		}
	}
	return false
}

// HasNode reports whether the file says anything about the node around the
// executor (format v2): CPUs, an I/O share or interference.
func (sc *Scenario) HasNode() bool {
	return sc.Node != nil || len(sc.Interference) > 0 || sc.DoesIO()
}

// NeighbourLoad is the interference active at t seconds: runnable
// neighbour threads and neighbour writers. Overlapping episodes add up.
func (sc *Scenario) NeighbourLoad(tSec float64) (threads, writers int) {
	for i := range sc.Interference {
		e := &sc.Interference[i]
		if tSec >= e.AtS && tSec < e.AtS+e.ForS {
			threads += e.Threads
			writers += e.Writers
		}
	}
	return threads, writers
}

func (sc *Scenario) validateNode() error {
	if sc.Node != nil && (sc.Node.CPUs < 1 || sc.Node.CPUs > maxCPUs) {
		return bad("node.cpus must be in [1, %d], got %d", maxCPUs, sc.Node.CPUs)
	}
	for i := range sc.Classes {
		c := &sc.Classes[i]
		if !finite(c.IOShare) || c.IOShare < 0 || c.IOShare > 1 {
			return bad("class %q: io_share must be in [0, 1], got %v", c.Name, c.IOShare)
		}
	}
	if len(sc.Interference) > maxEpisodes {
		return bad("interference: %d episodes, at most %d", len(sc.Interference), maxEpisodes)
	}
	for i := range sc.Interference {
		if err := sc.Interference[i].validate(sc.DurationS); err != nil {
			return fmt.Errorf("%w: interference[%d]: %v", ErrBadScenario, i, err)
		}
	}
	return nil
}

func (e *Episode) validate(duration float64) error {
	if !finite(e.AtS) || e.AtS < 0 {
		return fmt.Errorf("at_s must be a non-negative number, got %v", e.AtS)
	}
	if e.AtS >= duration {
		return fmt.Errorf("at_s %v starts after the run ends (duration_s %v)", e.AtS, duration)
	}
	if !finite(e.ForS) || e.ForS <= 0 {
		return fmt.Errorf("for_s must be positive, got %v", e.ForS)
	}
	switch e.Kind {
	case InterferenceCPU:
		if e.Threads < 1 || e.Threads > maxNeighbourLoad {
			return fmt.Errorf("threads must be in [1, %d], got %d", maxNeighbourLoad, e.Threads)
		}
		if e.Writers != 0 {
			return fmt.Errorf("writers does not belong to kind %q", e.Kind)
		}
	case InterferenceIO:
		if e.Writers < 1 || e.Writers > maxNeighbourLoad {
			return fmt.Errorf("writers must be in [1, %d], got %d", maxNeighbourLoad, e.Writers)
		}
		if e.Threads != 0 {
			return fmt.Errorf("threads does not belong to kind %q", e.Kind)
		}
	case "":
		return fmt.Errorf("missing kind (%s, %s)", InterferenceCPU, InterferenceIO)
	default:
		return fmt.Errorf("unknown kind %q (%s, %s)", e.Kind, InterferenceCPU, InterferenceIO)
	}
	return nil
}
