package rten

// Field ids (vtable slot k sits at byte 4+2k of the vtable).
const (
	idModelSchemaVersion = 0
	idModelGraph         = 1
	idModelMetadata      = 2

	idGraphNodes    = 0
	idGraphInputs   = 1
	idGraphOutputs  = 2
	idGraphCaptures = 3

	idNodeName = 0
	idNodeData = 1 // union: tag 1, value 2

	idOpType    = 0
	idOpAttrs   = 1 // union: tag 1, value 2
	idOpInputs  = 3
	idOpOutputs = 4

	idConstShape      = 0
	idConstData       = 1 // union: tag 1, value 2
	idConstDType      = 3
	idConstDataOffset = 4

	idValueShape = 0
	idValueDType = 1

	idDimValue = 0
	idDimName  = 1

	idIfThen = 0
	idIfElse = 1
	idLoop   = 0

	idDataData = 0 // FloatData/Int32Data/Int8Data/UInt8Data.data
)
