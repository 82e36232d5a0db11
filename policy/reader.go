package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

var (
	// ErrMalformedModel reports bytes that are not a complete protobuf
	// message: a truncated, corrupt or empty file.
	ErrMalformedModel = errors.New("policy: malformed ONNX model (truncated or corrupt)")
	// ErrForeignModel reports a well-formed ONNX file that is not a triage
	// model: no triage metadata, another graph, other inputs or outputs.
	ErrForeignModel = errors.New("policy: not a triage model")
)

// Bounds on what the reader accepts, so a hostile file cannot make it
// allocate or compute without limit.
const (
	maxLayers        = 32
	maxLayerWidth    = 4096
	maxMetadataProps = 1024
)

// ReadMetadata returns the triage metadata of an ONNX model without decoding
// its graph. A file without triage.schema is refused with ErrForeignModel;
// whether the schema matches is CheckSchema's question.
func ReadMetadata(b []byte) (Metadata, error) {
	meta, _, err := readModel(b, false)
	return meta, err
}

// ReadONNX decodes a model written by WriteONNX back into its MLP and
// metadata. It accepts exactly that graph: input "state" [N,NumFeatures], a
// chain of Gemm (transB=1, alpha=beta=1) with Relu between them, output "q"
// [N,5]; or, for an ensemble of K members (MetaMembers), the chain ending
// in "q_members" [N,5K], a second output, and the Gemm that averages it
// into "q" with exactly the weights WriteONNX writes.
func ReadONNX(b []byte) (*MLP, Metadata, error) {
	meta, m, err := readModel(b, true)
	if err != nil {
		return nil, Metadata{}, err
	}
	return m, meta, nil
}

func readModel(b []byte, withGraph bool) (Metadata, *MLP, error) {
	if len(b) == 0 {
		return Metadata{}, nil, fmt.Errorf("%w: empty file", ErrMalformedModel)
	}
	var (
		graph    []byte
		hasGraph bool
		props    = map[string]string{}
		nprops   int
		opset    uint64
	)
	err := eachField(b, "model", func(f protoField) error {
		switch f.num {
		case fModelGraph:
			if err := f.wantType(protowire.BytesType, "model"); err != nil {
				return err
			}
			if hasGraph {
				return fmt.Errorf("%w: more than one graph", ErrForeignModel)
			}
			graph, hasGraph = f.b, true
		case fModelOpsetImport:
			if err := f.wantType(protowire.BytesType, "model"); err != nil {
				return err
			}
			domain, version, err := readOpset(f.b)
			if err != nil {
				return err
			}
			if domain == "" || domain == "ai.onnx" {
				opset = version
			}
		case fModelMetadataProps:
			if err := f.wantType(protowire.BytesType, "model"); err != nil {
				return err
			}
			if nprops++; nprops > maxMetadataProps {
				return fmt.Errorf("%w: more than %d metadata entries", ErrForeignModel, maxMetadataProps)
			}
			k, v, err := readEntry(f.b)
			if err != nil {
				return err
			}
			if _, dup := props[k]; dup {
				return fmt.Errorf("%w: metadata key %q appears twice", ErrForeignModel, k)
			}
			props[k] = v
		}
		return nil
	})
	if err != nil {
		return Metadata{}, nil, err
	}
	schema, ok := props[MetaSchema]
	if !ok {
		return Metadata{}, nil, fmt.Errorf("%w: no %s metadata (a foreign model, or a file cut short)", ErrForeignModel, MetaSchema)
	}
	meta := Metadata{Schema: schema, Version: props[MetaVersion], Description: props[MetaDescription]}
	if fs := props[MetaFeatures]; fs != "" {
		meta.Features = strings.Split(fs, ",")
	}
	// Another schema's ranges are not this build's to read: its metadata
	// is returned without them, and its graph refused below.
	if v, ok := props[MetaFeatureRanges]; ok && otherSchema(meta) == nil {
		r, err := ParseFeatureRanges(v)
		if err != nil {
			return Metadata{}, nil, err
		}
		meta.Ranges = r
	}
	members := 1
	if v, ok := props[MetaMembers]; ok {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > MaxMembers {
			return Metadata{}, nil, fmt.Errorf("%w: %s is %q, want a count 1..%d", ErrBadMetadata, MetaMembers, v, MaxMembers)
		}
		members = k
	}
	for k, v := range props {
		switch k {
		case MetaSchema, MetaFeatures, MetaVersion, MetaDescription, MetaMembers, MetaFeatureRanges:
		default:
			if meta.Extra == nil {
				meta.Extra = map[string]string{}
			}
			meta.Extra[k] = v
		}
	}
	if !withGraph {
		return meta, nil, nil
	}
	if err := otherSchema(meta); err != nil {
		return Metadata{}, nil, err
	}
	if !hasGraph {
		return Metadata{}, nil, fmt.Errorf("%w: no graph", ErrForeignModel)
	}
	if opset < 11 {
		// Gemm's optional-C and broadcasting rules this reader relies on
		// date from opset 11.
		return Metadata{}, nil, fmt.Errorf("%w: default-domain opset %d, want 11 or later", ErrForeignModel, opset)
	}
	m, err := readGraph(graph, members)
	if err != nil {
		return Metadata{}, nil, err
	}
	return meta, m, nil
}

// otherSchema is CheckSchema's error for a model of another schema and
// another feature count, nil otherwise. Such a model cannot be read as
// this build's graph (nor its feature ranges as this build's), and the
// schema is the reason: the answer names it (a triage.state.v2 model on a
// v3 agent after an upgrade) rather than calling the file "not a triage
// model".
func otherSchema(meta Metadata) error {
	if meta.Schema != StateSchema && len(meta.Features) != NumFeatures {
		return CheckSchema(meta)
	}
	return nil
}

func readOpset(b []byte) (domain string, version uint64, err error) {
	err = eachField(b, "opset_import", func(f protoField) error {
		switch f.num {
		case fOpsetDomain:
			domain = string(f.b)
			return f.wantType(protowire.BytesType, "opset_import")
		case fOpsetVersion:
			version = f.v
			return f.wantType(protowire.VarintType, "opset_import")
		}
		return nil
	})
	return domain, version, err
}

func readEntry(b []byte) (key, value string, err error) {
	err = eachField(b, "metadata_props", func(f protoField) error {
		switch f.num {
		case fEntryKey:
			key = string(f.b)
		case fEntryValue:
			value = string(f.b)
		default:
			return nil
		}
		return f.wantType(protowire.BytesType, "metadata_props")
	})
	return key, value, err
}

// onnxNode is the part of a NodeProto the MLP reader looks at.
type onnxNode struct {
	opType, domain, name string
	inputs, outputs      []string
	ints                 map[string]int64
	floats               map[string]float32
}

// onnxTensor is a float initializer.
type onnxTensor struct {
	dims []int64
	data []float32
}

func readGraph(b []byte, members int) (*MLP, error) {
	var (
		nodes   []onnxNode
		inits   = map[string]onnxTensor{}
		inputs  []valueInfo
		outputs []valueInfo
	)
	err := eachField(b, "graph", func(f protoField) error {
		switch f.num {
		case fGraphNode, fGraphInitializer, fGraphInput, fGraphOutput:
			if err := f.wantType(protowire.BytesType, "graph"); err != nil {
				return err
			}
		}
		switch f.num {
		case fGraphNode:
			if len(nodes) >= 2*maxLayers {
				return fmt.Errorf("%w: more than %d nodes", ErrForeignModel, 2*maxLayers)
			}
			n, err := readNode(f.b)
			if err != nil {
				return err
			}
			nodes = append(nodes, n)
		case fGraphInitializer:
			if len(inits) >= 2*maxLayers {
				return fmt.Errorf("%w: more than %d initializers", ErrForeignModel, 2*maxLayers)
			}
			name, t, err := readTensor(f.b)
			if err != nil {
				return err
			}
			inits[name] = t
		case fGraphInput, fGraphOutput:
			v, err := readValueInfo(f.b)
			if err != nil {
				return err
			}
			if f.num == fGraphInput {
				inputs = append(inputs, v)
			} else {
				outputs = append(outputs, v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := checkIO("input", inputs, InputName, NumFeatures); err != nil {
		return nil, err
	}
	if members == 1 {
		if err := checkIO("output", outputs, OutputName, NumActions); err != nil {
			return nil, err
		}
		return mlpFromNodes(nodes, inits, OutputName, 0)
	}
	if err := checkEnsembleOutputs(outputs, members); err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: graph has no nodes", ErrForeignModel)
	}
	if err := checkMeanGemm(nodes[len(nodes)-1], inits, members); err != nil {
		return nil, err
	}
	return mlpFromNodes(nodes[:len(nodes)-1], inits, MembersOutputName, members)
}

// checkEnsembleOutputs wants the two outputs of a K-member ensemble: "q"
// [N,5] and "q_members" [N,5K].
func checkEnsembleOutputs(outputs []valueInfo, k int) error {
	if len(outputs) != 2 {
		names := make([]string, len(outputs))
		for i, o := range outputs {
			names[i] = o.name
		}
		return fmt.Errorf("%w: an ensemble of %d members has outputs %v, want %q and %q", ErrForeignModel, k, names, OutputName, MembersOutputName)
	}
	if outputs[0].name == MembersOutputName {
		outputs = []valueInfo{outputs[1], outputs[0]}
	}
	if err := checkIO("output", outputs[:1], OutputName, NumActions); err != nil {
		return err
	}
	return checkIO("output", outputs[1:], MembersOutputName, NumActions*k)
}

// checkMeanGemm wants the graph's last node to be the Gemm that averages
// "q_members" into "q": weights exactly meanWeightsOf(k), bias zero. Any
// other last step would make "q" something the Go decider does not compute.
func checkMeanGemm(n onnxNode, inits map[string]onnxTensor, k int) error {
	if n.opType != "Gemm" || (n.domain != "" && n.domain != "ai.onnx") || len(n.inputs) != 3 || n.inputs[0] != MembersOutputName ||
		len(n.outputs) != 1 || n.outputs[0] != OutputName {
		return fmt.Errorf("%w: the last node (%q, %s on %v) is not the Gemm from %q to %q", ErrForeignModel, n.name, n.opType, n.inputs, MembersOutputName, OutputName)
	}
	if n.ints["transB"] != 1 || n.ints["transA"] != 0 || n.floats["alpha"] != 1 || n.floats["beta"] != 1 {
		return fmt.Errorf("%w: averaging Gemm %q needs transA=0 transB=1 alpha=1 beta=1", ErrForeignModel, n.name)
	}
	w, okW := inits[n.inputs[1]]
	b, okB := inits[n.inputs[2]]
	want := meanWeightsOf(k)
	if !okW || !okB || len(w.dims) != 2 || w.dims[0] != NumActions || w.dims[1] != int64(NumActions*k) ||
		len(b.dims) != 1 || b.dims[0] != NumActions || !slices.Equal(w.data, want) || slices.ContainsFunc(b.data, func(x float32) bool { return x != 0 }) {
		return fmt.Errorf("%w: averaging Gemm %q does not average %d members (weights 1/%d on each member's action, bias 0)", ErrForeignModel, n.name, k, k)
	}
	return nil
}

// mlpFromNodes walks Gemm, Relu, Gemm, ..., Gemm and rebuilds the layers,
// the last of which writes final.
func mlpFromNodes(nodes []onnxNode, inits map[string]onnxTensor, final string, members int) (*MLP, error) {
	m := &MLP{Members: members}
	prev, width := InputName, NumFeatures
	for i := 0; i < len(nodes); i++ {
		n := nodes[i]
		if n.opType != "Gemm" || (n.domain != "" && n.domain != "ai.onnx") {
			return nil, fmt.Errorf("%w: node %d (%q) is %s, want Gemm", ErrForeignModel, i, n.name, n.opType)
		}
		if len(n.inputs) != 3 || n.inputs[0] != prev || len(n.outputs) != 1 {
			return nil, fmt.Errorf("%w: Gemm node %q takes %v, want [%s W B] and one output", ErrForeignModel, n.name, n.inputs, prev)
		}
		if n.ints["transB"] != 1 || n.ints["transA"] != 0 || n.floats["alpha"] != 1 || n.floats["beta"] != 1 {
			return nil, fmt.Errorf("%w: Gemm node %q needs transA=0 transB=1 alpha=1 beta=1", ErrForeignModel, n.name)
		}
		w, okW := inits[n.inputs[1]]
		bias, okB := inits[n.inputs[2]]
		if !okW || !okB {
			return nil, fmt.Errorf("%w: Gemm node %q: weights %q or bias %q is not an initializer", ErrForeignModel, n.name, n.inputs[1], n.inputs[2])
		}
		if len(w.dims) != 2 || w.dims[1] != int64(width) || len(bias.dims) != 1 || bias.dims[0] != w.dims[0] {
			return nil, fmt.Errorf("%w: Gemm node %q: weights %v and bias %v do not fit input width %d", ErrForeignModel, n.name, w.dims, bias.dims, width)
		}
		if len(m.Layers) == maxLayers {
			return nil, fmt.Errorf("%w: more than %d layers", ErrForeignModel, maxLayers)
		}
		out := int(w.dims[0])
		m.Layers = append(m.Layers, Dense{In: width, Out: out, W: w.data, B: bias.data})
		prev, width = n.outputs[0], out
		if i+1 < len(nodes) {
			i++
			r := nodes[i]
			if r.opType != "Relu" || len(r.inputs) != 1 || r.inputs[0] != prev || len(r.outputs) != 1 {
				return nil, fmt.Errorf("%w: node %d (%q) is %s on %v, want Relu on %s", ErrForeignModel, i, r.name, r.opType, r.inputs, prev)
			}
			prev = r.outputs[0]
		}
	}
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("%w: graph has no Gemm nodes", ErrForeignModel)
	}
	if prev != final {
		return nil, fmt.Errorf("%w: the last layer writes %q, want %q", ErrForeignModel, prev, final)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrForeignModel, err)
	}
	for li, l := range m.Layers {
		for _, xs := range [][]float32{l.W, l.B} {
			for _, x := range xs {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return nil, fmt.Errorf("%w: layer %d has a non-finite weight", ErrForeignModel, li)
				}
			}
		}
	}
	return m, nil
}

func readNode(b []byte) (onnxNode, error) {
	n := onnxNode{ints: map[string]int64{}, floats: map[string]float32{"alpha": 1, "beta": 1}}
	err := eachField(b, "node", func(f protoField) error {
		switch f.num {
		case fNodeInput:
			n.inputs = append(n.inputs, string(f.b))
		case fNodeOutput:
			n.outputs = append(n.outputs, string(f.b))
		case fNodeName:
			n.name = string(f.b)
		case fNodeOpType:
			n.opType = string(f.b)
		case fNodeDomain:
			n.domain = string(f.b)
		case fNodeAttribute:
			if err := f.wantType(protowire.BytesType, "node"); err != nil {
				return err
			}
			if len(n.ints)+len(n.floats) > 16 {
				return fmt.Errorf("%w: node has too many attributes", ErrForeignModel)
			}
			return readAttr(f.b, &n)
		default:
			return nil
		}
		if len(n.inputs)+len(n.outputs) > 16 {
			return fmt.Errorf("%w: node has too many inputs or outputs", ErrForeignModel)
		}
		return f.wantType(protowire.BytesType, "node")
	})
	return n, err
}

func readAttr(b []byte, n *onnxNode) error {
	var (
		name       string
		i          int64
		fl         float32
		typ        uint64
		hasI, hasF bool
	)
	err := eachField(b, "attribute", func(f protoField) error {
		switch f.num {
		case fAttrName:
			name = string(f.b)
			return f.wantType(protowire.BytesType, "attribute")
		case fAttrI:
			i, hasI = int64(f.v), true
			return f.wantType(protowire.VarintType, "attribute")
		case fAttrF:
			fl, hasF = math.Float32frombits(uint32(f.v)), true
			return f.wantType(protowire.Fixed32Type, "attribute")
		case fAttrType:
			typ = f.v
			return f.wantType(protowire.VarintType, "attribute")
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case typ == attrTypeInt || (typ == 0 && hasI):
		n.ints[name] = i
	case typ == attrTypeFloat || (typ == 0 && hasF):
		n.floats[name] = fl
	default:
		// Another attribute kind: record it so the Gemm check refuses it
		// instead of ignoring something that changes the computation.
		n.ints[name] = math.MinInt64
		n.floats[name] = float32(math.NaN())
	}
	return nil
}

func readTensor(b []byte) (string, onnxTensor, error) {
	var (
		name      string
		t         onnxTensor
		dtype     uint64
		raw       []byte
		hasRaw    bool
		packed    [][]byte
		unpacked  []float32
		external  bool
		tooMany   bool
		nUnpacked int
	)
	err := eachField(b, "initializer", func(f protoField) error {
		switch f.num {
		case fTensorDims:
			if len(t.dims) == 4 {
				tooMany = true
				return nil
			}
			if f.typ == protowire.BytesType { // packed
				for p := f.b; len(p) > 0; {
					v, n := protowire.ConsumeVarint(p)
					if n < 0 {
						return fmt.Errorf("%w: initializer dims: %v", ErrMalformedModel, protowire.ParseError(n))
					}
					t.dims = append(t.dims, int64(v))
					p = p[n:]
					if len(t.dims) > 4 {
						tooMany = true
						return nil
					}
				}
				return nil
			}
			t.dims = append(t.dims, int64(f.v))
			return f.wantType(protowire.VarintType, "initializer")
		case fTensorDataType:
			dtype = f.v
			return f.wantType(protowire.VarintType, "initializer")
		case fTensorName:
			name = string(f.b)
			return f.wantType(protowire.BytesType, "initializer")
		case fTensorRawData:
			raw, hasRaw = f.b, true
			return f.wantType(protowire.BytesType, "initializer")
		case fTensorFloatData:
			if f.typ == protowire.BytesType {
				packed = append(packed, f.b)
				return nil
			}
			if err := f.wantType(protowire.Fixed32Type, "initializer"); err != nil {
				return err
			}
			if nUnpacked++; nUnpacked > maxLayerWidth*maxLayerWidth {
				tooMany = true
				return nil
			}
			unpacked = append(unpacked, math.Float32frombits(uint32(f.v)))
		case fTensorDataLoc:
			external = f.v == 1
		}
		return nil
	})
	if err != nil {
		return "", onnxTensor{}, err
	}
	switch {
	case tooMany:
		return "", onnxTensor{}, fmt.Errorf("%w: initializer %q is larger than this reader accepts", ErrForeignModel, name)
	case external:
		return "", onnxTensor{}, fmt.Errorf("%w: initializer %q uses external data", ErrForeignModel, name)
	case dtype != tensorFloat:
		return "", onnxTensor{}, fmt.Errorf("%w: initializer %q has data type %d, want FLOAT", ErrForeignModel, name, dtype)
	}
	size := int64(1)
	for _, d := range t.dims {
		if d <= 0 || d > maxLayerWidth {
			return "", onnxTensor{}, fmt.Errorf("%w: initializer %q has dims %v", ErrForeignModel, name, t.dims)
		}
		size *= d
	}
	// size is at most maxLayerWidth^2 here only for rank 2; bound it against
	// the bytes actually present before allocating.
	var have int64
	if hasRaw {
		have = int64(len(raw)) / 4
		if int64(len(raw))%4 != 0 {
			have = -1
		}
	} else {
		for _, p := range packed {
			have += int64(len(p)) / 4
		}
		have += int64(len(unpacked))
	}
	if have != size {
		return "", onnxTensor{}, fmt.Errorf("%w: initializer %q has dims %v but %d values", ErrMalformedModel, name, t.dims, have)
	}
	t.data = make([]float32, 0, size)
	if hasRaw {
		for i := 0; i+4 <= len(raw); i += 4 {
			t.data = append(t.data, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
		}
	} else {
		for _, p := range packed {
			for i := 0; i+4 <= len(p); i += 4 {
				t.data = append(t.data, math.Float32frombits(binary.LittleEndian.Uint32(p[i:])))
			}
		}
		t.data = append(t.data, unpacked...)
	}
	return name, t, nil
}

// valueInfo is a graph input or output: its name, element type and shape
// (-1 for a symbolic or unknown dimension).
type valueInfo struct {
	name  string
	elem  uint64
	shape []int64
}

func readValueInfo(b []byte) (valueInfo, error) {
	var v valueInfo
	err := eachField(b, "value_info", func(f protoField) error {
		switch f.num {
		case fValueName:
			v.name = string(f.b)
			return f.wantType(protowire.BytesType, "value_info")
		case fValueType:
			return f.eachFieldNumbered("value_info", "type", fTypeTensor, func(tf protoField) error {
				if err := tf.wantType(protowire.BytesType, "type"); err != nil {
					return err
				}
				return readTensorType(tf.b, &v)
			})
		}
		return nil
	})
	return v, err
}

func readTensorType(b []byte, v *valueInfo) error {
	return eachField(b, "tensor_type", func(f protoField) error {
		switch f.num {
		case fTensorTypeElem:
			v.elem = f.v
			return f.wantType(protowire.VarintType, "tensor_type")
		case fTensorTypeShape:
			return f.eachFieldNumbered("tensor_type", "shape", fShapeDim, func(df protoField) error {
				if len(v.shape) >= 8 {
					return fmt.Errorf("%w: tensor %q has more than 8 dimensions", ErrForeignModel, v.name)
				}
				dim := int64(-1)
				err := eachField(df.b, "dim", func(vf protoField) error {
					if vf.num == fDimValue && vf.typ == protowire.VarintType {
						dim = int64(vf.v)
					}
					return nil
				})
				v.shape = append(v.shape, dim)
				return err
			})
		}
		return nil
	})
}

// checkIO wants exactly one float tensor called name with shape [N, width].
func checkIO(kind string, got []valueInfo, name string, width int) error {
	if len(got) != 1 {
		names := make([]string, len(got))
		for i, g := range got {
			names[i] = g.name
		}
		return fmt.Errorf("%w: graph has %ss %v, want one %s %q", ErrForeignModel, kind, names, kind, name)
	}
	g := got[0]
	if g.name != name || g.elem != tensorFloat || len(g.shape) != 2 || g.shape[1] != int64(width) {
		return fmt.Errorf("%w: graph %s is %q (type %d, shape %v), want %q float32 [N,%d]", ErrForeignModel, kind, g.name, g.elem, g.shape, name, width)
	}
	if g.shape[0] != -1 {
		// A fixed batch would make every Decide of another size fail in ORT.
		return fmt.Errorf("%w: graph %s %q has a fixed batch dimension %d, want a dynamic one", ErrForeignModel, kind, name, g.shape[0])
	}
	return nil
}
