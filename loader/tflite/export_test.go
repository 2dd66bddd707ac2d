package tflite

import (
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/mmapfile"
)

// VerifyRegion runs the FlatBuffer verification alone (the structural
// checks, those LiteRT's flatbuffers::Verifier makes), for the tests that
// compare it with LiteRT's: the walk NewFile makes, and that of the
// operators it leaves to the first use order.
func VerifyRegion(mf *mmapfile.File) error {
	m := &Model{mf: mf}
	c, _, err := m.verify(nil)
	defer m.putRegion()
	if err != nil {
		return err
	}
	defer c.release()
	m.root.Init(m.fb, flatbuffers.GetUOffsetT(m.fb))
	m.nsub = m.root.SubgraphsLength()
	if err := m.verifyParams(); err != nil {
		return err
	}
	var sg tflitefb.SubGraph
	for i := range m.nsub {
		m.root.Subgraphs(&sg, i)
		t := sg.Table()
		start := int64(t.Vector(flatbuffers.UOffsetT(t.Offset(vtSubGraphOperators))))
		for k := range sg.OperatorsLength() {
			if _, err := m.walk.Elem(start, k, "Operator", tflitefb.VerifyOperator, operatorDepth); err != nil {
				return err
			}
		}
	}
	return nil
}

// PoisonImages puts a buffer of 0xa5 bytes into the pool of the sparse
// reads' buffers: a sparse read that used a byte it did not fetch would
// then see it.
func PoisonImages() {
	b := make([]byte, sparseFile)
	for i := range b {
		b[i] = 0xa5
	}
	images.Put(&b)
}

// Sparse reports whether m's FlatBuffer was read sparsely.
func Sparse(m *Model) bool { return m.sparse }
