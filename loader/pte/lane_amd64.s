//go:build amd64 && !purego

#include "go_asm.h"
#include "textflag.h"

// func laneLoop(a *laneRun)
//
// The lane's loop (lane.go, builder.lane), check for check: a value it
// reads passes every check the Go loop makes, and at the first check that
// fails it stops there with nothing of that value written. The checks come
// in another order (the sizes' product before the dim order) where that
// frees a register: all of them must pass, so the order changes nothing
// but which one is made first. Every load lies in the buffer by a check
// made before it, as in the Go loop.
//
// Registers across the loop: SI the buffer, DI the laneRun, R8 v, R9 left,
// R10 budget, R11 where the next record goes. In a value: AX its EValue's,
// then its Tensor's position t; BX its dtype and element size
// (laneDTypes); R14 the number of sizes ns; R15 their product, then the
// tensor's bytes; R13 the dim order's length nd, then the work spent.
TEXT ·laneLoop(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ laneRun_fb(DI), SI
	MOVQ laneRun_v(DI), R8
	MOVQ laneRun_left(DI), R9
	MOVQ laneRun_budget(DI), R10
	MOVQ laneRun_recs(DI), R11

loop:
	CMPQ R8, laneRun_hi(DI)
	JGE  done
	CMPQ R9, laneRun_objects(DI)
	JLT  done

	// The EValue that values[v] refers to: in the buffer, using the
	// vtable the lane was armed for, tagged Tensor.
	MOVQ R8, AX
	SHLQ $2, AX
	ADDQ laneRun_vstart(DI), AX
	MOVL (SI)(AX*1), CX
	TESTL CX, CX
	JEQ  done
	ADDQ CX, AX
	CMPQ AX, laneRun_eMax(DI)
	JGT  done
	MOVLQSX (SI)(AX*1), CX
	MOVQ AX, DX
	SUBQ CX, DX
	CMPQ DX, laneRun_evt(DI)
	JNE  done
	MOVQ laneRun_etag(DI), CX
	ADDQ AX, CX
	CMPB (SI)(CX*1), $const_tagTensor
	JNE  done

	// Its Tensor: the same for the Tensor vtable.
	ADDQ laneRun_eval(DI), AX
	MOVL (SI)(AX*1), CX
	TESTL CX, CX
	JEQ  done
	ADDQ CX, AX
	CMPQ AX, laneRun_tMax(DI)
	JGT  done
	MOVLQSX (SI)(AX*1), CX
	MOVQ AX, DX
	SUBQ CX, DX
	CMPQ DX, laneRun_tvt(DI)
	JNE  done

	// The scalar type (0 when absent) and its dtype and size.
	XORL BX, BX
	MOVQ laneRun_st(DI), CX
	TESTQ CX, CX
	JEQ  dtype
	ADDQ AX, CX
	MOVBLZX (SI)(CX*1), BX

dtype:
	MOVQ laneRun_dtypes(DI), CX
	MOVWLZX (CX)(BX*2), BX
	CMPL BX, $0x100
	JCS  done // size 0: not a type the lane reads

	// The sizes vector: R13 its first element, R14 its length.
	XORL R13, R13
	XORL R14, R14
	MOVQ laneRun_sizes(DI), CX
	TESTQ CX, CX
	JEQ  rank0
	ADDQ AX, CX
	MOVL (SI)(CX*1), DX
	TESTL DX, DX
	JEQ  done
	ADDQ DX, CX
	CMPQ CX, laneRun_nm4(DI)
	JGT  done
	MOVL (SI)(CX*1), R14
	LEAQ 4(CX), R13
	CMPQ R14, $const_laneMaxDims
	JGT  done
	LEAQ (R13)(R14*4), CX
	CMPQ CX, laneRun_n(DI)
	JGT  done

	// Their product (R15) and OR (R12), as the Go loop's switch.
	CMPQ R14, $2
	JNE  rank1
	MOVL (SI)(R13*1), R15
	MOVL 4(SI)(R13*1), DX
	MOVL R15, R12
	ORL  DX, R12
	IMULQ DX, R15
	JMP  product

rank1:
	CMPQ R14, $1
	JNE  rank4
	MOVL (SI)(R13*1), R15
	MOVL R15, R12
	JMP  product

rank0:
	MOVL $1, R15
	XORL R12, R12
	JMP  product

rank4:
	TESTQ R14, R14
	JEQ  rank0
	CMPQ R14, $4
	JNE  rank3
	MOVL (SI)(R13*1), R15
	MOVL 4(SI)(R13*1), DX
	MOVL R15, R12
	ORL  DX, R12
	IMULQ DX, R15
	CMPQ R15, laneRun_numLimit(DI)
	JHI  done
	MOVL 8(SI)(R13*1), DX
	MOVL 12(SI)(R13*1), CX
	ORL  DX, R12
	ORL  CX, R12
	IMULQ CX, DX
	CMPQ DX, laneRun_numLimit(DI)
	JHI  done
	IMULQ DX, R15
	JMP  product

rank3:
	CMPQ R14, $3
	JNE  rankN
	MOVL (SI)(R13*1), R15
	MOVL 4(SI)(R13*1), DX
	MOVL 8(SI)(R13*1), CX
	MOVL R15, R12
	ORL  DX, R12
	ORL  CX, R12
	IMULQ DX, R15
	CMPQ R15, laneRun_numLimit(DI)
	JHI  done
	IMULQ CX, R15
	JMP  product

rankN:
	// 5 to 8 sizes, as laneNumel: each one not negative, each running
	// product at most numLimit.
	MOVL $1, R15
	XORL R12, R12
	LEAQ (R13)(R14*4), DX

rankNLoop:
	MOVL (SI)(R13*1), CX
	TESTL CX, CX
	JMI  done
	IMULQ CX, R15
	CMPQ R15, laneRun_numLimit(DI)
	JHI  done
	ADDQ $4, R13
	CMPQ R13, DX
	JLT  rankNLoop

product:
	// No size negative, the product at most numLimit, the bytes within
	// the file.
	TESTL R12, R12
	JMI  done
	CMPQ R15, laneRun_numLimit(DI)
	JHI  done
	MOVQ BX, CX
	SHRQ $8, CX
	IMULQ CX, R15
	CMPQ R15, laneRun_limit(DI)
	JHI  done

	// The dim_order vector: R12 its first byte, R13 its length, which is
	// 0 or ns.
	XORL R13, R13
	MOVQ laneRun_dims(DI), CX
	TESTQ CX, CX
	JEQ  data
	ADDQ AX, CX
	MOVL (SI)(CX*1), DX
	TESTL DX, DX
	JEQ  done
	ADDQ DX, CX
	CMPQ CX, laneRun_nm4(DI)
	JGT  done
	MOVL (SI)(CX*1), R13
	LEAQ 4(CX), R12
	LEAQ (R12)(R13*1), CX
	CMPQ CX, laneRun_n(DI)
	JGT  done
	TESTQ R13, R13
	JEQ  data
	CMPQ R13, R14
	JNE  done

	// A permutation of 0..nd-1: the identity, read as one word whose
	// bytes past nd are shifted out; else byte by byte.
	CMPQ R12, laneRun_nm8(DI)
	JGT  perm
	MOVQ (SI)(R12*1), DX
	MOVQ $const_identityDims, CX
	XORQ CX, DX
	MOVQ R13, CX
	SHLQ $3, CX
	NEGQ CX
	SHLQ CX, DX
	TESTQ DX, DX
	JEQ  data

perm:
	// Rare: spill t and the dtype for registers. R12 walks the bytes to
	// AX, DX holds the ones seen.
	MOVQ AX, laneRun_spill0(DI)
	MOVQ BX, laneRun_spill1(DI)
	LEAQ (R12)(R13*1), AX
	XORL DX, DX

permLoop:
	MOVBLZX (SI)(R12*1), CX
	CMPQ CX, R13
	JGE  done
	MOVL $1, BX
	SHLQ CX, BX
	TESTQ BX, DX
	JNE  done
	ORQ  BX, DX
	INCQ R12
	CMPQ R12, AX
	JLT  permLoop
	MOVQ laneRun_spill0(DI), AX
	MOVQ laneRun_spill1(DI), BX

data:
	// The work spent: ns + nd elements.
	ADDQ R14, R13
	XORL CX, CX
	MOVQ laneRun_dbi(DI), DX
	TESTQ DX, DX
	JEQ  nodata
	ADDQ AX, DX
	MOVL (SI)(DX*1), CX
	TESTL CX, CX
	JNE  segment

nodata:
	// No data in the file: checked, not kept.
	CMPQ R10, R13
	JLT  done
	SUBQ laneRun_objects(DI), R9
	SUBQ R13, R10
	MOVQ laneRun_vt(DI), DX
	MOVL $-1, (DX)(R8*4)
	INCQ R8
	JMP  loop

segment:
	// The data: its offset in the constant segment, and its bytes
	// within the segment.
	CMPQ CX, laneRun_offN(DI)
	JGE  done
	MOVQ laneRun_offPos(DI), DX
	LEAQ (DX)(CX*8), DX
	MOVQ (SI)(DX*1), DX
	MOVQ laneRun_segLen(DI), CX
	CMPQ DX, CX
	JHI  done
	SUBQ DX, CX
	CMPQ R15, CX
	JHI  done
	ADDQ laneRun_cost(DI), R13
	CMPQ R10, R13
	JLT  done
	SUBQ laneRun_objects(DI), R9
	SUBQ R13, R10

	// vt[v] = next; next++; the record.
	MOVQ laneRun_next(DI), CX
	MOVQ laneRun_vt(DI), R12
	MOVL CX, (R12)(R8*4)
	INCQ CX
	MOVQ CX, laneRun_next(DI)
	ADDQ laneRun_segOff(DI), DX
	MOVQ DX, tensorRec_off(R11)
	MOVQ R15, tensorRec_nbytes(R11)
	MOVL AX, tensorRec_tensor(R11)
	MOVB $const_laneLocSegment, tensorRec_loc(R11)
	MOVB BX, tensorRec_dt(R11)
	ADDQ $tensorRec__size, R11
	INCQ R8
	JMP  loop

done:
	MOVQ R8, laneRun_v(DI)
	MOVQ R9, laneRun_left(DI)
	MOVQ R10, laneRun_budget(DI)
	MOVQ R11, laneRun_recs(DI)
	RET
