package policy

// Field numbers and enum values of onnx.proto3 that the writer and reader use.
// Only the subset a Gemm/Relu MLP needs is listed; names follow onnx.proto so a
// reader can check them against the upstream schema.
const (
	// ModelProto
	fModelIRVersion     = 1
	fModelProducerName  = 2
	fModelProducerVer   = 3
	fModelDocString     = 6
	fModelGraph         = 7
	fModelOpsetImport   = 8
	fModelMetadataProps = 14

	// OperatorSetIdProto
	fOpsetDomain  = 1
	fOpsetVersion = 2

	// StringStringEntryProto
	fEntryKey   = 1
	fEntryValue = 2

	// GraphProto
	fGraphNode        = 1
	fGraphName        = 2
	fGraphInitializer = 5
	fGraphInput       = 11
	fGraphOutput      = 12

	// NodeProto
	fNodeInput     = 1
	fNodeOutput    = 2
	fNodeName      = 3
	fNodeOpType    = 4
	fNodeAttribute = 5
	fNodeDomain    = 7

	// AttributeProto
	fAttrName = 1
	fAttrF    = 2
	fAttrI    = 3
	fAttrType = 20

	attrTypeFloat = 1
	attrTypeInt   = 2

	// TensorProto
	fTensorDims      = 1
	fTensorDataType  = 2
	fTensorFloatData = 4
	fTensorName      = 8
	fTensorRawData   = 9
	fTensorDataLoc   = 14

	tensorFloat = 1 // TensorProto.DataType FLOAT

	// ValueInfoProto
	fValueName = 1
	fValueType = 2

	// TypeProto and TypeProto.Tensor
	fTypeTensor      = 1
	fTensorTypeElem  = 1
	fTensorTypeShape = 2
	fShapeDim        = 1
	fDimValue        = 1
	fDimParam        = 2
)

// The model format: what WriteONNX produces and ReadONNX accepts.
const (
	// InputName is the graph's input ([N,NumFeatures] float32), OutputName
	// its Q-values ([N,5] float32, the members' mean for an ensemble); N is
	// the dynamic batch dimension. An ensemble of K members has a second
	// output, MembersOutputName ([N,5K], member-major), and says K in
	// MetaMembers.
	InputName         = "state"
	OutputName        = "q"
	MembersOutputName = "q_members"
	batchDim          = "N"

	// opsetVersion 13 has Gemm with optional C and Relu for float; irVersion 8
	// is what the onnx package writes for opset 13-15 and every ORT since 1.10
	// reads it.
	opsetVersion = 13
	irVersion    = 8
	producerName = "triage"
)

// Metadata keys in the model's metadata_props.
const (
	MetaSchema      = "triage.schema"
	MetaFeatures    = "triage.features"
	MetaVersion     = "triage.version"
	MetaDescription = "triage.description"
	// MetaMembers is an ensemble's member count K (absent for a plain
	// network); MetaFeatureRanges the training states' range per feature
	// (FeatureRanges.Encode). The writer sets both from the MLP and
	// Metadata.Ranges; they are not Extra keys.
	MetaMembers       = "triage.members"
	MetaFeatureRanges = "triage.feature_ranges"
)
