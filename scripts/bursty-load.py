#!/usr/bin/env python3
"""Bursty CPU load for measuring the run queue (docs/calibration.md, "Bursty threads and the run queue").

usage: bursty-load.py THREADS DUTY BURST_MS SECONDS

Forks THREADS processes; each alternates a burst of CPU time drawn from an
exponential of mean BURST_MS with an exponential sleep, so that it is busy
DUTY of the time, until SECONDS have passed. The calibration's CPU levels are
steady spinners; an executor's workers look like this instead.
"""
import os
import random
import sys
import time


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    n, duty, burst_ms, seconds = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    if n < 1 or not 0 < duty < 1 or burst_ms <= 0 or seconds <= 0:
        sys.exit("bursty-load.py: want THREADS >= 1, 0 < DUTY < 1, BURST_MS > 0, SECONDS > 0")
    idle_ms = burst_ms * (1 - duty) / duty
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            r = random.Random(i)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                burst = r.expovariate(1 / burst_ms) / 1000
                t0 = time.process_time()
                while time.process_time() - t0 < burst:  # CPU time: a burst is work, not wall time
                    pass
                time.sleep(r.expovariate(1 / idle_ms) / 1000)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
