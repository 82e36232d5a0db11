package policy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomEnsemble is an MLP of k members: random hidden layers and a last
// layer of NumActions*k outputs, member-major.
func randomEnsemble(rng *rand.Rand, k int, hidden ...int) *MLP {
	m := randomMLP(rng, hidden...)
	last := &m.Layers[len(m.Layers)-1]
	*last = randomMLP(rng, append([]int{last.In}, NumActions*k)...).Layers[1]
	last.In = m.Layers[len(m.Layers)-1].In
	m.Members = k
	return m
}

// constEnsemble is an ensemble whose members answer constant Q-values (all
// weights zero, biases the given rows), so its agreement is known.
func constEnsemble(rows ...[NumActions]float32) *MLP {
	k := len(rows)
	l := Dense{In: NumFeatures, Out: NumActions * k, W: make([]float32, NumFeatures*NumActions*k), B: make([]float32, NumActions*k)}
	for j, r := range rows {
		copy(l.B[j*NumActions:], r[:])
	}
	return &MLP{Layers: []Dense{l}, Members: k}
}

func TestEnsembleForwardIsTheMembersMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	m := randomEnsemble(rng, 4, 16, 8)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	members := make([]float32, NumActions*4)
	for _, s := range randomStates(rng, 50) {
		var q, q2 [NumActions]float32
		m.ForwardMembers(&s, &q, members, nil)
		m.Forward(&s, &q2, nil)
		if q != q2 {
			t.Fatalf("Forward %v, ForwardMembers %v", q2, q)
		}
		for a := range q {
			var sum float64
			for j := 0; j < 4; j++ {
				sum += float64(members[j*NumActions+a])
			}
			if d := math.Abs(sum/4 - float64(q[a])); d > 1e-6 {
				t.Fatalf("action %d: q %v, mean of members %v", a, q[a], sum/4)
			}
		}
	}
	// Mean is the same network as one plain MLP.
	plain := m.Mean()
	if plain.Members != 0 || plain.Validate() != nil {
		t.Fatalf("Mean: members %d, %v", plain.Members, plain.Validate())
	}
	for _, s := range randomStates(rng, 50) {
		var q, qp [NumActions]float32
		m.Forward(&s, &q, nil)
		plain.Forward(&s, &qp, nil)
		for a := range q {
			if math.Abs(float64(q[a]-qp[a])) > 1e-5 {
				t.Fatalf("Mean differs at action %d: %v vs %v", a, qp[a], q[a])
			}
		}
	}
}

func TestValidateMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		name string
		m    *MLP
	}{
		{"negative members", &MLP{Layers: randomMLP(rng).Layers, Members: -1}},
		{"too many members", &MLP{Layers: randomMLP(rng).Layers, Members: MaxMembers + 1}},
		{"3 members with 5 outputs", &MLP{Layers: randomMLP(rng).Layers, Members: 3}},
		{"15 outputs read as one member", &MLP{Layers: randomEnsemble(rng, 3).Layers}},
	} {
		if err := c.m.Validate(); !errors.Is(err, ErrBadShape) {
			t.Errorf("%s: %v, want ErrBadShape", c.name, err)
		}
	}
}

// TestEnsembleONNXRoundTripAndORT writes ensembles, reads them back, and
// runs them in ONNX Runtime and in Go: Q-values within 1e-5, the same
// priority, agreement and range flag.
func TestEnsembleONNXRoundTripAndORT(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, c := range []struct {
		k      int
		hidden []int
	}{{2, nil}, {3, []int{16}}, {5, []int{64, 32}}} {
		m := randomEnsemble(rng, c.k, c.hidden...)
		meta := testMetadata("ensemble")
		meta.Ranges = &FeatureRanges{}
		for _, s := range randomStates(rng, 200) {
			for i := range s {
				s[i] = 0.05 + 0.9*s[i] // [0.05, 0.95]: some random states lie outside, some inside
			}
			meta.Ranges.Observe(s)
		}
		b := mustMarshal(t, m, meta)
		got, gotMeta, err := ReadONNX(b)
		if err != nil {
			t.Fatalf("k %d: ReadONNX: %v", c.k, err)
		}
		if !reflect.DeepEqual(got, m) || !reflect.DeepEqual(gotMeta, meta) {
			t.Fatalf("k %d: the round trip changed the model (members %d) or its metadata (%+v)", c.k, got.Members, gotMeta)
		}
		sess := loadCPU(t, b)
		ref := NewGoDecider(m, meta)
		for _, n := range []int{1, 7, 300} {
			states := randomStates(rng, n)
			fromORT, fromGo := make([]Decision, n), make([]Decision, n)
			if err := sess.Decide(states, fromORT); err != nil {
				t.Fatalf("k %d: Session.Decide: %v", c.k, err)
			}
			if err := ref.Decide(states, fromGo); err != nil {
				t.Fatal(err)
			}
			var maxErr float64
			outside, unsure := 0, 0
			for i := range states {
				for a := range fromORT[i].Q {
					maxErr = math.Max(maxErr, math.Abs(float64(fromORT[i].Q[a]-fromGo[i].Q[a])))
				}
				o, g := fromORT[i], fromGo[i]
				if o.Priority != g.Priority || o.Agreement != g.Agreement || o.OutOfRange != g.OutOfRange {
					t.Errorf("k %d state %d: ORT %+v, Go %+v", c.k, i, o, g)
				}
				if g.OutOfRange {
					outside++
				}
				if g.Agreement < 1 {
					unsure++
				}
			}
			if maxErr >= 1e-5 {
				t.Errorf("k %d batch %d: max abs error ORT vs Go %g, want < 1e-5", c.k, n, maxErr)
			}
			t.Logf("k %d batch %d: max abs error ORT vs Go %.3g; %d out of range, %d with members disagreeing", c.k, n, maxErr, outside, unsure)
			if n == 300 && (outside == 0 || outside == n || unsure == 0) {
				t.Errorf("k %d: %d of %d out of range and %d disagreeing: the test does not exercise the flags", c.k, outside, n, unsure)
			}
		}
	}
}

func TestAgreementIsTheShareOfMembersThatChoseTheMeansPriority(t *testing.T) {
	// Means: q4 = 0.5, q2 = 0.375, q0 = 0.05: priority 4, which two of the
	// four members chose.
	m := constEnsemble(
		[NumActions]float32{4: 1},
		[NumActions]float32{4: 1},
		[NumActions]float32{2: 1.5},
		[NumActions]float32{0: 0.2},
	)
	plain := &MLP{Layers: []Dense{{In: NumFeatures, Out: NumActions, W: make([]float32, NumFeatures*NumActions), B: []float32{0, 0, 0, 1, 0}}}}
	for _, c := range []struct {
		name      string
		m         *MLP
		priority  int
		agreement float32
	}{{"4 members", m, 4, 0.5}, {"plain network", plain, 3, 1}} {
		meta := testMetadata("const")
		for name, d := range map[string]Decider{"go": NewGoDecider(c.m, meta), "ort": loadCPU(t, mustMarshal(t, c.m, meta))} {
			out := make([]Decision, 1)
			if err := d.Decide([]State{Neutral}, out); err != nil {
				t.Fatal(err)
			}
			if out[0].Priority != c.priority || out[0].Agreement != c.agreement || out[0].OutOfRange {
				t.Errorf("%s, %s: %+v, want priority %d agreement %v, in range (the model has no ranges)", c.name, name, out[0], c.priority, c.agreement)
			}
		}
	}
}

// TestReadONNXRefusesBrokenEnsembles patches a good ensemble (and a plain
// model) into near misses: each must be refused, never read as something
// the Go decider would compute differently from ONNX Runtime.
func TestReadONNXRefusesBrokenEnsembles(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	good := mustMarshal(t, randomEnsemble(rng, 3, 8), testMetadata("ens"))
	if _, _, err := ReadONNX(good); err != nil {
		t.Fatal(err)
	}
	third := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1/float32(3)))
	half := binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.5))
	// A plain model with an Extra key one letter away from a reserved one,
	// then patched onto it, stands for a writer that got the key wrong.
	plainWith := func(v string) []byte {
		meta := testMetadata("plain")
		meta.Extra["triage.memberz"] = v
		return bytes.Replace(mustMarshal(t, randomMLP(rng, 8), meta), []byte("triage.memberz"), []byte(MetaMembers), 1)
	}
	ensembleWith := func(v string) []byte {
		return bytes.Replace(good, []byte(MetaMembers+"\x12\x013"), []byte(MetaMembers+"\x12\x01"+v), 1)
	}
	cases := []struct {
		name  string
		model []byte
		want  error
		says  string
	}{
		{"averaging weights changed", bytes.Replace(good, third, half, 1), ErrForeignModel, "does not average"},
		{"members metadata says 2", ensembleWith("2"), ErrForeignModel, "q_members"},
		{"members metadata says 4", ensembleWith("4"), ErrForeignModel, "q_members"},
		{"members metadata not a number", ensembleWith("x"), ErrBadMetadata, MetaMembers},
		{"members metadata 0", ensembleWith("0"), ErrBadMetadata, MetaMembers},
		{"plain graph said to be 2 members", plainWith("2"), ErrForeignModel, "outputs"},
		{"members beyond the bound", plainWith("65"), ErrBadMetadata, "1..64"},
		{"members output renamed", bytes.ReplaceAll(good, []byte("q_members"), []byte("q_memberz")), ErrForeignModel, "q_member"},
	}
	for _, c := range cases {
		_, _, err := ReadONNX(c.model)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
	// members "1" is a plain network, as if the key were absent.
	if m, _, err := ReadONNX(plainWith("1")); err != nil || m.NumMembers() != 1 {
		t.Errorf("members 1 on a plain graph: %v", err)
	}
}

func TestWriteONNXRefusesReservedEnsembleKeys(t *testing.T) {
	for _, k := range []string{MetaMembers, MetaFeatureRanges} {
		meta := testMetadata("x")
		meta.Extra[k] = "3"
		if _, err := MarshalONNX(BootstrapMLP(), meta); !errors.Is(err, ErrBadMetadata) {
			t.Errorf("Extra key %s: %v, want ErrBadMetadata", k, err)
		}
	}
	meta := testMetadata("x")
	meta.Ranges = &FeatureRanges{}
	if _, err := MarshalONNX(BootstrapMLP(), meta); !errors.Is(err, ErrBadMetadata) {
		t.Errorf("empty ranges: %v, want ErrBadMetadata", err)
	}
}

// The Go decider of an ensemble with ranges allocates nothing per call
// once warm: the members' Q-values live in its pooled scratch space.
func TestGoDeciderEnsembleAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	meta := testMetadata("alloc")
	meta.Ranges = &FeatureRanges{}
	meta.Ranges.Observe(Neutral)
	d := NewGoDecider(randomEnsemble(rng, 4, 32), meta)
	states := randomStates(rng, 16)
	out := make([]Decision, len(states))
	if n := testing.AllocsPerRun(100, func() { d.Decide(states, out) }); n != 0 {
		t.Errorf("Decide of 16 states allocates %v times per call, want 0", n)
	}
}
