// Package rtenattr describes the fields of RTen's operator attribute tables
// (internal/schema/rten.fbs) for the code that walks them field by field:
// the verifier in loader/rten and the V1 to V2 rewrite in repack.
package rtenattr

import "github.com/edgeload/edgeload/internal/schema/rtenfb"

// Fields lists the fields of each operator attribute table in id order:
// "1" and "4" are scalars of that many bytes, "[4]" a vector of 4-byte
// scalars, "s" a string, "u" the Scalar union (two ids), "g" a Graph. A
// member not listed has no fields.
var Fields = map[rtenfb.OperatorAttrs][]string{
	rtenfb.OperatorAttrsArgMaxAttrs:             {"4", "1"},
	rtenfb.OperatorAttrsAveragePoolAttrs:        {"[4]", "1", "[4]", "[4]", "1", "1"},
	rtenfb.OperatorAttrsBatchNormalizationAttrs: {"4"},
	rtenfb.OperatorAttrsCastAttrs:               {"1"},
	rtenfb.OperatorAttrsConcatAttrs:             {"4"},
	rtenfb.OperatorAttrsConstantOfShapeAttrs:    {"u"},
	rtenfb.OperatorAttrsConvAttrs:               {"1", "[4]", "4", "[4]", "[4]"},
	rtenfb.OperatorAttrsConvTransposeAttrs:      {"[4]", "1", "[4]", "4", "[4]"},
	rtenfb.OperatorAttrsFlattenAttrs:            {"4"},
	rtenfb.OperatorAttrsGatherAttrs:             {"4"},
	rtenfb.OperatorAttrsGemmAttrs:               {"4", "4", "1", "1"},
	rtenfb.OperatorAttrsGRUAttrs:                {"1", "4", "1"},
	rtenfb.OperatorAttrsLeakyReluAttrs:          {"4"},
	rtenfb.OperatorAttrsLSTMAttrs:               {"1", "4"},
	rtenfb.OperatorAttrsMaxPoolAttrs:            {"[4]", "1", "[4]", "[4]", "1"},
	rtenfb.OperatorAttrsReduceMeanAttrs:         {"[4]", "1", "1"},
	rtenfb.OperatorAttrsReshapeAttrs:            {"1"},
	rtenfb.OperatorAttrsResizeAttrs:             {"1", "1", "1"},
	rtenfb.OperatorAttrsSplitAttrs:              {"4", "4"},
	rtenfb.OperatorAttrsSoftmaxAttrs:            {"4"},
	rtenfb.OperatorAttrsTransposeAttrs:          {"[4]"},
	rtenfb.OperatorAttrsModAttrs:                {"1"},
	rtenfb.OperatorAttrsScatterElementsAttrs:    {"4", "1"},
	rtenfb.OperatorAttrsOneHotAttrs:             {"4"},
	rtenfb.OperatorAttrsTopKAttrs:               {"4", "1", "1"},
	rtenfb.OperatorAttrsHardSigmoidAttrs:        {"4", "4"},
	rtenfb.OperatorAttrsTriluAttrs:              {"1"},
	rtenfb.OperatorAttrsScatterNDAttrs:          {"1"},
	rtenfb.OperatorAttrsNonMaxSuppressionAttrs:  {"1"},
	rtenfb.OperatorAttrsLayerNormalizationAttrs: {"4", "4"},
	rtenfb.OperatorAttrsRandomUniformAttrs:      {"[4]", "4", "4", "4"},
	rtenfb.OperatorAttrsEluAttrs:                {"4"},
	rtenfb.OperatorAttrsRandomUniformLikeAttrs:  {"4", "4", "4"},
	rtenfb.OperatorAttrsRandomNormalAttrs:       {"4", "4", "4", "[4]"},
	rtenfb.OperatorAttrsRandomNormalLikeAttrs:   {"4", "4", "4"},
	rtenfb.OperatorAttrsGatherNDAttrs:           {"4"},
	rtenfb.OperatorAttrsGeluAttrs:               {"1"},
	rtenfb.OperatorAttrsEinsumAttrs:             {"s"},
	rtenfb.OperatorAttrsIfAttrs:                 {"g", "g"},
	rtenfb.OperatorAttrsPadAttrs:                {"1"},
	rtenfb.OperatorAttrsDequantizeLinearAttrs:   {"4"},
	rtenfb.OperatorAttrsQuantizeLinearAttrs:     {"4", "1"},
	rtenfb.OperatorAttrsDepthToSpaceAttrs:       {"1", "4"},
	rtenfb.OperatorAttrsShapeAttrs:              {"4", "4"},
	rtenfb.OperatorAttrsDropoutAttrs:            {"4"},
	rtenfb.OperatorAttrsEyeLikeAttrs:            {"1", "4"},
	rtenfb.OperatorAttrsLoopAttrs:               {"g"},
	rtenfb.OperatorAttrsSequenceEmptyAttrs:      {"1"},
	rtenfb.OperatorAttrsConcatFromSequenceAttrs: {"4", "1"},
	rtenfb.OperatorAttrsSplitToSequenceAttrs:    {"4", "1"},
	rtenfb.OperatorAttrsGridSampleAttrs:         {"1"},
	rtenfb.OperatorAttrsSTFTAttrs:               {"1"},
}
