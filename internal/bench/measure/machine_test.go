package measure

import (
	"strings"
	"testing"
)

func TestCPUModel(t *testing.T) {
	m := CPUModel()
	t.Logf("CPU model %q", m)
	if strings.ContainsAny(m, "\n:") {
		t.Errorf("model %q holds a newline or the separator", m)
	}
}
