package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrBadMetadata reports metadata that cannot be written (a reserved key in
// Extra, a feature name that would not survive the comma-separated list,
// empty feature ranges) or read (malformed members or feature ranges).
var ErrBadMetadata = errors.New("policy: bad model metadata")

// WriteONNX writes m as an ONNX model: one Gemm (transB=1) per layer with a
// Relu between layers, input "state" [N,NumFeatures] float32 with a dynamic
// batch dimension, output "q" [N,5] float32, opset 13, and meta in
// metadata_props. An ensemble (m.Members = K > 1) ends its layers in
// "q_members" [N,5K], a second graph output, and one more Gemm averages it
// into "q" with constant 1/K weights; MetaMembers says K.
func WriteONNX(w io.Writer, m *MLP, meta Metadata) error {
	b, err := MarshalONNX(m, meta)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing ONNX model: %w", err)
	}
	return nil
}

// MarshalONNX returns the bytes WriteONNX writes.
func MarshalONNX(m *MLP, meta Metadata) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil MLP", ErrBadShape)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	props, err := metadataProps(meta, m.NumMembers())
	if err != nil {
		return nil, err
	}
	var b []byte
	b = protowire.AppendTag(b, fModelIRVersion, protowire.VarintType)
	b = protowire.AppendVarint(b, irVersion)
	b = appendString(b, fModelProducerName, producerName)
	b = appendString(b, fModelProducerVer, StateSchema)
	b = appendMessage(b, fModelOpsetImport, func(o []byte) []byte {
		o = appendString(o, fOpsetDomain, "")
		o = protowire.AppendTag(o, fOpsetVersion, protowire.VarintType)
		return protowire.AppendVarint(o, opsetVersion)
	})
	if meta.Description != "" {
		b = appendString(b, fModelDocString, meta.Description)
	}
	b = appendMessage(b, fModelGraph, func(g []byte) []byte { return appendGraph(g, m) })
	// metadata_props go last, and triage.schema last of them: a file cut at
	// any field boundary then lacks triage.schema, so truncation is always
	// detected rather than silently dropping a key.
	for _, kv := range props {
		b = appendMessage(b, fModelMetadataProps, func(e []byte) []byte {
			e = appendString(e, fEntryKey, kv[0])
			return appendString(e, fEntryValue, kv[1])
		})
	}
	return b, nil
}

// metadataProps orders the key/value pairs as written: Extra sorted by key,
// then the triage keys with the schema last.
func metadataProps(meta Metadata, members int) ([][2]string, error) {
	for _, f := range meta.Features {
		if f == "" || strings.ContainsAny(f, ", \t\n") {
			return nil, fmt.Errorf("%w: feature name %q must be non-empty without commas or spaces", ErrBadMetadata, f)
		}
	}
	var props [][2]string
	keys := make([]string, 0, len(meta.Extra))
	for k := range meta.Extra {
		switch k {
		case MetaSchema, MetaFeatures, MetaVersion, MetaDescription, MetaMembers, MetaFeatureRanges:
			return nil, fmt.Errorf("%w: Extra key %q is reserved", ErrBadMetadata, k)
		case "":
			return nil, fmt.Errorf("%w: empty Extra key", ErrBadMetadata)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		props = append(props, [2]string{k, meta.Extra[k]})
	}
	if meta.Ranges != nil {
		if meta.Ranges.Empty() {
			return nil, fmt.Errorf("%w: feature ranges that observed no state", ErrBadMetadata)
		}
		props = append(props, [2]string{MetaFeatureRanges, meta.Ranges.Encode()})
	}
	if members > 1 {
		props = append(props, [2]string{MetaMembers, strconv.Itoa(members)})
	}
	props = append(props,
		[2]string{MetaDescription, meta.Description},
		[2]string{MetaVersion, meta.Version},
		[2]string{MetaFeatures, strings.Join(meta.Features, ",")},
		[2]string{MetaSchema, meta.Schema},
	)
	return props, nil
}

func appendGraph(g []byte, m *MLP) []byte {
	g = appendString(g, fGraphName, "triage_dqn")
	prev := InputName
	for i, l := range m.Layers {
		wName, bName := "W"+strconv.Itoa(i), "B"+strconv.Itoa(i)
		g = appendMessage(g, fGraphInitializer, func(t []byte) []byte {
			return appendFloatTensor(t, wName, l.W, int64(l.Out), int64(l.In))
		})
		g = appendMessage(g, fGraphInitializer, func(t []byte) []byte {
			return appendFloatTensor(t, bName, l.B, int64(l.Out))
		})
		last := i == len(m.Layers)-1
		gemmOut := "gemm" + strconv.Itoa(i)
		if last {
			gemmOut = finalOutput(m)
		}
		g = appendGemm(g, "Gemm_"+strconv.Itoa(i), prev, wName, bName, gemmOut)
		prev = gemmOut
		if !last {
			reluOut := "relu" + strconv.Itoa(i)
			g = appendMessage(g, fGraphNode, func(n []byte) []byte {
				n = appendString(n, fNodeInput, gemmOut)
				n = appendString(n, fNodeOutput, reluOut)
				n = appendString(n, fNodeName, "Relu_"+strconv.Itoa(i))
				return appendString(n, fNodeOpType, "Relu")
			})
			prev = reluOut
		}
	}
	k := m.NumMembers()
	if k > 1 {
		g = appendMeanGemm(g, k)
	}
	g = appendMessage(g, fGraphInput, func(v []byte) []byte { return appendBatchValueInfo(v, InputName, NumFeatures) })
	g = appendMessage(g, fGraphOutput, func(v []byte) []byte { return appendBatchValueInfo(v, OutputName, NumActions) })
	if k > 1 {
		g = appendMessage(g, fGraphOutput, func(v []byte) []byte { return appendBatchValueInfo(v, MembersOutputName, NumActions*k) })
	}
	return g
}

// finalOutput names the last layer's output: the Q-values of a plain
// network, the members' of an ensemble.
func finalOutput(m *MLP) string {
	if m.NumMembers() > 1 {
		return MembersOutputName
	}
	return OutputName
}

// Names of the averaging Gemm's initializers.
const (
	meanWeights = "Wmean"
	meanBias    = "Bmean"
)

// meanWeightsOf is the averaging Gemm's [NumActions, NumActions*k] weights:
// row a holds 1/k at each member's action a and 0 elsewhere, so
// q = q_members·Wᵀ is the members' mean.
func meanWeightsOf(k int) []float32 {
	w := make([]float32, NumActions*NumActions*k)
	inv := 1 / float32(k)
	for a := 0; a < NumActions; a++ {
		for j := 0; j < k; j++ {
			w[a*NumActions*k+j*NumActions+a] = inv
		}
	}
	return w
}

// appendMeanGemm writes the Gemm that averages "q_members" into "q", with
// no Relu before it: the members' Q-values are averaged as they are.
func appendMeanGemm(g []byte, k int) []byte {
	g = appendMessage(g, fGraphInitializer, func(t []byte) []byte {
		return appendFloatTensor(t, meanWeights, meanWeightsOf(k), NumActions, int64(NumActions*k))
	})
	g = appendMessage(g, fGraphInitializer, func(t []byte) []byte {
		return appendFloatTensor(t, meanBias, make([]float32, NumActions), NumActions)
	})
	return appendGemm(g, "Gemm_mean", MembersOutputName, meanWeights, meanBias, OutputName)
}

// appendGemm writes one Gemm node, out = in·Wᵀ + B (transB=1, alpha=beta=1).
func appendGemm(g []byte, name, in, w, b, out string) []byte {
	return appendMessage(g, fGraphNode, func(n []byte) []byte {
		n = appendString(n, fNodeInput, in)
		n = appendString(n, fNodeInput, w)
		n = appendString(n, fNodeInput, b)
		n = appendString(n, fNodeOutput, out)
		n = appendString(n, fNodeName, name)
		n = appendString(n, fNodeOpType, "Gemm")
		n = appendMessage(n, fNodeAttribute, func(a []byte) []byte { return appendFloatAttr(a, "alpha", 1) })
		n = appendMessage(n, fNodeAttribute, func(a []byte) []byte { return appendFloatAttr(a, "beta", 1) })
		return appendMessage(n, fNodeAttribute, func(a []byte) []byte { return appendIntAttr(a, "transB", 1) })
	})
}

// appendBatchValueInfo describes a float32 tensor of shape [N, width].
func appendBatchValueInfo(v []byte, name string, width int) []byte {
	v = appendString(v, fValueName, name)
	return appendMessage(v, fValueType, func(t []byte) []byte {
		return appendMessage(t, fTypeTensor, func(tt []byte) []byte {
			tt = protowire.AppendTag(tt, fTensorTypeElem, protowire.VarintType)
			tt = protowire.AppendVarint(tt, tensorFloat)
			return appendMessage(tt, fTensorTypeShape, func(s []byte) []byte {
				s = appendMessage(s, fShapeDim, func(d []byte) []byte { return appendString(d, fDimParam, batchDim) })
				return appendMessage(s, fShapeDim, func(d []byte) []byte {
					d = protowire.AppendTag(d, fDimValue, protowire.VarintType)
					return protowire.AppendVarint(d, uint64(width))
				})
			})
		})
	})
}

// appendFloatTensor writes an initializer as raw little-endian bytes, the
// compact form ORT maps without conversion.
func appendFloatTensor(t []byte, name string, data []float32, dims ...int64) []byte {
	for _, d := range dims {
		t = protowire.AppendTag(t, fTensorDims, protowire.VarintType)
		t = protowire.AppendVarint(t, uint64(d))
	}
	t = protowire.AppendTag(t, fTensorDataType, protowire.VarintType)
	t = protowire.AppendVarint(t, tensorFloat)
	t = appendString(t, fTensorName, name)
	raw := make([]byte, 4*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	t = protowire.AppendTag(t, fTensorRawData, protowire.BytesType)
	return protowire.AppendBytes(t, raw)
}

func appendFloatAttr(a []byte, name string, f float32) []byte {
	a = appendString(a, fAttrName, name)
	a = protowire.AppendTag(a, fAttrF, protowire.Fixed32Type)
	a = protowire.AppendFixed32(a, math.Float32bits(f))
	a = protowire.AppendTag(a, fAttrType, protowire.VarintType)
	return protowire.AppendVarint(a, attrTypeFloat)
}

func appendIntAttr(a []byte, name string, i int64) []byte {
	a = appendString(a, fAttrName, name)
	a = protowire.AppendTag(a, fAttrI, protowire.VarintType)
	a = protowire.AppendVarint(a, uint64(i))
	a = protowire.AppendTag(a, fAttrType, protowire.VarintType)
	return protowire.AppendVarint(a, attrTypeInt)
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendMessage writes a length-delimited sub-message built by fill.
func appendMessage(b []byte, field protowire.Number, fill func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, fill(nil))
}
