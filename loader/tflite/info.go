package tflite

import "github.com/edgeload/edgeload/internal/schema/tflitefb"

// info is what the first call of Description, OperatorCodes, Metadata,
// SignatureDefs or ExternalBuffers builds from the verified FlatBuffer,
// whose indices NewFile checked.
type info struct {
	description string
	opcodes     []OperatorCode
	metadata    []Metadata
	signatures  []SignatureDef
	extBuffers  []ExternalBuffer
}

func (m *Model) infos() *info {
	m.infoOnce.Do(func() { m.info = m.buildInfo() })
	return m.info
}

func (m *Model) buildInfo() *info {
	defer m.unpin()
	if !m.pin() {
		return &info{} // closed: the FlatBuffer is gone
	}
	r := &m.root
	in := &info{description: string(r.Description())}
	in.opcodes = make([]OperatorCode, r.OperatorCodesLength())
	var oc tflitefb.OperatorCode
	for i := range in.opcodes {
		r.OperatorCodes(&oc, i)
		in.opcodes[i] = OperatorCode{
			// The runtime reads the larger of the two codes.
			Builtin: max(int32(oc.BuiltinCode()), int32(oc.DeprecatedBuiltinCode())),
			Custom:  string(oc.CustomCode()),
			Version: oc.Version(),
		}
	}
	in.metadata = make([]Metadata, r.MetadataLength())
	var md tflitefb.Metadata
	for i := range in.metadata {
		r.Metadata(&md, i)
		b := int(md.Buffer())
		in.metadata[i] = Metadata{Name: string(md.Name()), Buffer: b, Data: m.buffers[b].Data}
	}
	in.signatures = make([]SignatureDef, r.SignatureDefsLength())
	var sd tflitefb.SignatureDef
	var tm tflitefb.TensorMap
	for i := range in.signatures {
		r.SignatureDefs(&sd, i)
		maps := func(n int, get func(*tflitefb.TensorMap, int) bool) []TensorMap {
			out := make([]TensorMap, n)
			for k := range out {
				get(&tm, k)
				out[k] = TensorMap{Name: string(tm.Name()), Tensor: int(tm.TensorIndex())}
			}
			return out
		}
		in.signatures[i] = SignatureDef{
			Key:      string(sd.SignatureKey()),
			Subgraph: int(sd.SubgraphIndex()),
			Inputs:   maps(sd.InputsLength(), sd.Inputs),
			Outputs:  maps(sd.OutputsLength(), sd.Outputs),
		}
	}
	var g tflitefb.ExternalBufferGroup
	groups := make([]string, r.ExternalBufferGroupsLength())
	for i := range groups {
		r.ExternalBufferGroups(&g, i)
		groups[i] = string(g.Name())
	}
	in.extBuffers = make([]ExternalBuffer, r.ExternalBuffersLength())
	var eb tflitefb.ExternalBuffer
	for i := range in.extBuffers {
		r.ExternalBuffers(&eb, i)
		in.extBuffers[i] = ExternalBuffer{ID: eb.Id(), Group: groups[eb.Group()], Offset: eb.Offset(), Length: eb.Length(), Packing: string(eb.Packing())}
	}
	return in
}
