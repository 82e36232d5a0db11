package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSchemaSaysWhatDiffers(t *testing.T) {
	renamed := CurrentMetadata("v", "")
	renamed.Features[FeatClassP50], renamed.Features[FeatNetOrSyscall] = "class_p50", "retrans"
	cases := []struct {
		name string
		meta Metadata
		want []string
	}{
		{"other schema name", Metadata{Schema: "triage.state.v1", Features: FeatureNames[:]}, []string{`schema is "triage.state.v1", want "` + StateSchema + `"`}},
		{"renamed features", renamed, []string{`feature 3 is "class_p50", want "class_p50_log"`, `feature 11 is "retrans", want "net_or_syscall"`}},
		{"one feature short", Metadata{Schema: StateSchema, Features: FeatureNames[:NumFeatures-1]},
			[]string{fmt.Sprintf("%d features, want %d", NumFeatures-1, NumFeatures), fmt.Sprintf("missing feature %d %q", NumFeatures-1, FeatureNames[NumFeatures-1])}},
		{"one feature more", Metadata{Schema: StateSchema, Features: append(FeatureNames[:], "gpu_temp")},
			[]string{fmt.Sprintf("%d features, want %d", NumFeatures+1, NumFeatures), fmt.Sprintf("extra feature %d \"gpu_temp\"", NumFeatures)}},
		// The count, then the first 7 of the NumFeatures missing ones: 8 shown.
		{"no features at all", Metadata{Schema: StateSchema}, []string{fmt.Sprintf("0 features, want %d", NumFeatures),
			`missing feature 0 "queue_per_worker_log"`, fmt.Sprintf("and %d more", NumFeatures+1-8)}},
	}
	for _, c := range cases {
		err := CheckSchema(c.meta)
		if !errors.Is(err, ErrSchemaMismatch) {
			t.Errorf("%s: error %v, want ErrSchemaMismatch", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
	if err := CheckSchema(CurrentMetadata("v", "")); err != nil {
		t.Errorf("current metadata: %v", err)
	}
}

// TestLoadRefusesWrongSchema writes a real model with another schema and
// checks that loading it names the difference.
func TestLoadRefusesWrongSchema(t *testing.T) {
	meta := BootstrapMetadata()
	meta.Schema = "triage.state.v0"
	meta.Features = append([]string(nil), meta.Features...)
	meta.Features[6] = "runq_mean_log"
	_, err := LoadBytes(mustMarshal(t, BootstrapMLP(), meta), Config{Device: DeviceCPU})
	if !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("error %v, want ErrSchemaMismatch", err)
	}
	for _, w := range []string{`"triage.state.v0"`, `feature 6 is "runq_mean_log", want "runq_p50_log"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	t.Logf("wrong schema: %v", err)
}

// A model of an earlier schema, as deployed before an upgrade (the v1
// default model, 12 features; the v2 one, 20 features and their ranges):
// refused with the schema difference named, from the bytes and when
// loading, not as a foreign file.
func TestLoadRefusesAV1Model(t *testing.T) {
	refusesEarlierModel(t, "default-v1.onnx", "triage.state.v1", 12, `feature 0 is "queue_fill", want "queue_per_worker_log"`)
}

func TestLoadRefusesAV2Model(t *testing.T) {
	refusesEarlierModel(t, "default-v2.onnx", "triage.state.v2", 20, `missing feature 20 "tighter_share"`)
}

func refusesEarlierModel(t *testing.T, file, schema string, features int, featureDiff string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "models", file))
	if err != nil {
		t.Fatal(err)
	}
	if meta, err := ReadMetadata(b); err != nil || meta.Schema != schema || len(meta.Features) != features {
		t.Fatalf("the %s model's metadata: %+v, %v", schema, meta, err)
	}
	_, _, readErr := ReadONNX(b)
	_, loadErr := LoadBytes(b, Config{Device: DeviceCPU})
	for what, err := range map[string]error{"ReadONNX": readErr, "LoadBytes": loadErr} {
		if !errors.Is(err, ErrSchemaMismatch) {
			t.Fatalf("%s: error %v, want ErrSchemaMismatch", what, err)
		}
		for _, w := range []string{`schema is "` + schema + `", want "` + StateSchema + `"`, fmt.Sprintf("%d features, want %d", features, NumFeatures), featureDiff} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", what, err, w)
			}
		}
	}
	t.Logf("a %s model: %v", schema, loadErr)
}
