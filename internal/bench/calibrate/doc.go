// Package calibrate is `triage calibrate`: it puts controlled loads on
// the machine it runs on (runnable threads per CPU from 0.25 to 8, fsync'd
// writers from 0 to 16; package load), reads the agent's own signal
// sources under each (agent/signals: run-queue p50/p99, block-I/O p99, CPU
// utilisation), measures how much real CPU work and real fsync'd writes
// slow down, and returns a train.Calibration, which the simulator draws its
// kernel features and slowdowns from.
//
// It needs the machine to itself: any other load is measured with it.
package calibrate
