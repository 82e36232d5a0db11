package policy

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// protoField is one decoded protobuf field: v holds varint and fixed values,
// b the bytes of a length-delimited one (a sub-slice of the input, not a copy).
type protoField struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// eachField calls fn for every field of the message b. Decoding works on
// sub-slices of b, so nothing allocates in proportion to lengths the input
// claims: a corrupt length is a parse error, never a huge allocation.
func eachField(b []byte, what string, fn func(f protoField) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %s: field tag: %v", ErrMalformedModel, what, protowire.ParseError(n))
		}
		b = b[n:]
		f := protoField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			// Groups are not used by ONNX; skip them like an unknown field.
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: %s: field %d: %v", ErrMalformedModel, what, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// wantType reports a known field carried with the wrong wire type.
func (f protoField) wantType(t protowire.Type, what string) error {
	if f.typ != t {
		return fmt.Errorf("%w: %s field %d has wire type %d, want %d", ErrMalformedModel, what, f.num, f.typ, t)
	}
	return nil
}

// eachFieldNumbered reads f, a field of the message what, as a message of
// its own (sub) and calls fn for its fields numbered num only: the others
// are ones this reader has no use for.
func (f protoField) eachFieldNumbered(what, sub string, num protowire.Number, fn func(protoField) error) error {
	if err := f.wantType(protowire.BytesType, what); err != nil {
		return err
	}
	return eachField(f.b, sub, func(sf protoField) error {
		if sf.num != num {
			return nil
		}
		return fn(sf)
	})
}
