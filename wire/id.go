package wire

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxTaskIDBytes bounds a task id: the agent keeps tens of thousands of
// tasks in flight by id, and writes each id into the experience log.
const MaxTaskIDBytes = 128

// ErrBadTaskID reports a task id that is empty or longer than MaxTaskIDBytes.
var ErrBadTaskID = errors.New("wire: bad task id")

// Identified is a message that names a task: Task, Decision and Outcome.
type Identified interface {
	GetId() uint64
	GetTaskId() string
}

// TaskID is the id of the task m names: its task_id when that is set, else
// the decimal form of its numeric id (what clients of the first schema
// send, 0 included). The numeric 42 and the string "42" are the same task.
func TaskID(m Identified) string {
	if s := m.GetTaskId(); s != "" {
		return s
	}
	return strconv.FormatUint(m.GetId(), 10)
}

// CheckTaskID says why m's id cannot be used, or nil. In protobuf an id is
// never empty (an empty task_id means the numeric id), so the check is the
// length bound; JSON ids are checked when decoded (TaskIDJSON).
func CheckTaskID(m Identified) error {
	if n := len(m.GetTaskId()); n > MaxTaskIDBytes {
		return fmt.Errorf("%w: task_id of %d bytes, at most %d", ErrBadTaskID, n, MaxTaskIDBytes)
	}
	return nil
}

// DescribeTaskID is m's id for an error message: a numeric id as it is, a
// string id quoted.
func DescribeTaskID(m Identified) string {
	if s := m.GetTaskId(); s != "" {
		return strconv.Quote(s)
	}
	return strconv.FormatUint(m.GetId(), 10)
}
