package train

import (
	"math"
	"math/rand/v2"
)

// nodeVariation is how one training episode's node reads differently from
// the calibrated one (SimConfig.VaryNode). The calibration is one machine;
// the agent runs on many, and on the calibrated machine itself it read
// levels the calibration never measured: a real `bench e2e --scale 1` run
// logged block-I/O p99 at the idle node's 520 µs (background I/Os: the
// experience log, the journal) and above 2 ms in one record of six, where
// the simulator, with no task writing, always read the lone writer's
// 130 µs; and run-queue p50 above anything simulated. Those states fell
// outside the model's training ranges, so the guard's controller decided
// them, and that controller sent the 200 ms class to the top level beside
// the 20 ms one (docs/training.md, "Varying the node"). The variation:
//
//   - blkScale multiplies every block-I/O latency the features read
//     (another disk), log-uniform in [1/2, 8];
//   - quietIdle: with no task or neighbour writing, half the episodes read
//     the idle node's p99 (background I/Os) instead of the lone writer's;
//   - blkSigma: the spread of each window's block-I/O p99 is at least
//     this, 0.3 in log (a histogram of few I/Os is noisy);
//   - runqScale multiplies both run-queue latencies (another scheduler,
//     other CPUs), log-uniform in [1/2, 4].
//
// Only what the features read varies: how much a task slows down is still
// the calibration's, so a network learns that these levels say something
// only together with what the tasks feel (their class service times and
// waits), which carries over between machines.
type nodeVariation struct {
	blkScale, runqScale float64
	quietIdle           bool
	blkSigma            float64
}

// calibratedNode reads exactly the calibration.
var calibratedNode = nodeVariation{blkScale: 1, runqScale: 1}

// Ranges of the variation (see nodeVariation).
const (
	blkScaleLo, blkScaleHi   = 0.5, 8.0
	runqScaleLo, runqScaleHi = 0.5, 4.0
	variedBlkSigma           = 0.3
)

// drawNodeVariation draws one run's node from its own stream, so the
// arrivals, the noise and the missing sources are those of the calibrated
// node's run of the same seed: with probability p a varied node, else the
// calibrated one.
func drawNodeVariation(seed int64, p float64) nodeVariation {
	r := rand.New(rand.NewPCG(uint64(seed), 0x7472696167650005))
	// At p 1 no draw decides: the default model was trained so.
	if p < 1 && !(r.Float64() < p) {
		return calibratedNode
	}
	return nodeVariation{
		blkScale:  logUniform(r, blkScaleLo, blkScaleHi),
		runqScale: logUniform(r, runqScaleLo, runqScaleHi),
		quietIdle: r.Float64() < 0.5,
		blkSigma:  variedBlkSigma,
	}
}

// blkio is the block-I/O p99 (µs) and its log spread that this node reads
// at level l with writers writing: the quiet level is the idle node's in a
// quietIdle episode.
func (v nodeVariation) blkio(cal *Calibration, l IOLevel, writers float64) (us, sigma float64) {
	us, sigma = l.BlkioP99Us, l.BlkioP99Sigma
	if v.quietIdle && writers < 1 && cal.Idle.BlkioP99Us > 0 {
		us = cal.Idle.BlkioP99Us
	}
	return us * v.blkScale, math.Max(sigma, v.blkSigma)
}
