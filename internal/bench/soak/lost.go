package soak

import (
	"fmt"
	"strconv"

	"github.com/triage-agent/triage/experience"
)

// readBack reads the agent's experience log strictly (a corrupted record
// is an error) and counts its records, and the acknowledged outcomes that
// are not among them: lost_records. A record of a task whose outcome
// never came (TimedOut) does not answer an acknowledgement: there are a
// few, from decide calls the client library also sent as datagrams (after
// 250 ms without an answer) whose copy the agent decided again after the
// outcome came.
func readBack(dir string, acked []*idSet) (records, timedOut, lost int64, err error) {
	found := make([]idSet, len(acked))
	_, err = experience.ReadDirWith(dir, experience.ReadOptions{}, func(r experience.Record) error {
		records++
		if r.TimedOut {
			timedOut++
			return nil
		}
		id, perr := strconv.ParseUint(r.TaskID, 10, 64)
		if perr != nil {
			return nil // not a soak id: nothing of ours
		}
		if who := id >> idClientShift; who < uint64(len(found)) {
			found[who].add(id & (1<<idClientShift - 1))
		}
		return nil
	})
	if err != nil {
		return records, timedOut, 0, fmt.Errorf("reading the experience log back: %w", err)
	}
	for who, set := range acked {
		set.each(func(seq uint64) {
			if !found[who].has(seq) {
				lost++
			}
		})
	}
	return records, timedOut, lost, nil
}
