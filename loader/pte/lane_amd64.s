//go:build amd64 && !purego

#include "go_asm.h"
#include "textflag.h"

// func laneLoop(a *laneRun)
//
// The lane's loop (lane.go, builder.lane), check for check: a value it
// reads passes every check the Go loop makes, and at the first check that
// fails it stops there with nothing of that value written. Some checks
// come in another order (the sizes' product before the dim order) or in
// another form (a 32-bit comparison where the caller has made the values
// fit, a sum that must not carry): all of them must pass, so this changes
// nothing but which one is made first. Every load lies in the buffer by a
// check made before it, as in the Go loop. Positions are addresses here
// (laneRun's comment).
//
// The caller gives it at least one value (the loop is tested at its end).
// Registers across the loop: R8 the address of values[v]'s offset, R9 the
// number the next record gets, R10 the work budget left, R11 where the
// next record goes, SI the address 4 bytes before the buffer's end (nm4:
// a vector's length word lies in the buffer if its address is at most SI,
// and its elements if the address of its last 4 bytes is), DI the
// laneRun. In a value: AX its EValue's, then its Tensor's address; BX its
// dtype (low byte) and element size (laneRun.dtypes);
// R14 its number of sizes ns; R15 their product, then its bytes; R13 the
// dim order's length nd, then the work the value costs.
TEXT ·laneLoop(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ laneRun_ep(DI), R8
	MOVQ laneRun_next(DI), R9
	MOVQ laneRun_budget(DI), R10
	MOVQ laneRun_recs(DI), R11
	MOVQ laneRun_nm4(DI), SI

loop:
	// The EValue that values[v] refers to: in the buffer, using the
	// vtable the lane was armed for (e - soffset == evt, as 32 bits:
	// both lie in a buffer under 2 GiB), tagged Tensor. (An offset of
	// 0 fails the vtable check, as the Go loop's test of it would:
	// builder.lane.)
	MOVL (R8), CX
	LEAQ (R8)(CX*1), AX
	CMPQ AX, laneRun_eMax(DI)
	JHI  done
	MOVQ AX, DX
	SUBQ laneRun_evt(DI), DX
	CMPL DX, (AX)
	JNE  done
	MOVQ laneRun_etag(DI), CX
	CMPB (AX)(CX*1), $const_tagTensor
	JNE  done

	// Its Tensor: the same for the Tensor vtable.
	ADDQ laneRun_eval(DI), AX
	MOVL (AX), CX
	ADDQ CX, AX
	CMPQ AX, laneRun_tMax(DI)
	JHI  done
	MOVQ AX, DX
	SUBQ laneRun_tvt(DI), DX
	CMPL DX, (AX)
	JNE  done

	// The scalar type and its dtype and size (when the field is
	// absent, laneRun.dtypes gives scalar type 0's for any byte read).
	MOVQ laneRun_st(DI), CX
	MOVBLZX (AX)(CX*1), BX
	MOVWLZX laneRun_dtypes(DI)(BX*2), BX
	CMPL BX, $0x100
	JCS  done // size 0: not a type the lane reads

	// The sizes vector: CX 4 bytes before its first element, R14 its
	// length.
	MOVQ laneRun_sizes(DI), CX
	TESTQ CX, CX
	JEQ  rank0
	ADDQ AX, CX
	MOVL (CX), DX
	TESTL DX, DX
	JEQ  done
	ADDQ DX, CX
	CMPQ CX, SI
	JHI  done
	MOVL (CX), R14
	CMPQ R14, $const_laneMaxDims
	JHI  done
	LEAQ (CX)(R14*4), DX
	CMPQ DX, SI
	JHI  done

	// Their product (R15), as the Go loop's switch; none negative (the
	// sign of their OR).
	CMPQ R14, $2
	JNE  rank1
	MOVL 4(CX), R15
	MOVL 8(CX), DX
	MOVL R15, R12
	ORL  DX, R12
	JMI  done
	IMULQ DX, R15

product:
	// The product at most numLimit, its bytes within the file: at
	// most numMax[size].
	MOVBLZX BH, CX
	CMPQ R15, laneRun_numMax(DI)(CX*8)
	JHI  done
	IMULQ CX, R15

	// The dim_order vector: CX 4 bytes before its first byte, R13 its
	// length, which is 0 or ns.
	MOVQ laneRun_dims(DI), CX
	TESTQ CX, CX
	JEQ  nodims
	ADDQ AX, CX
	MOVL (CX), DX
	TESTL DX, DX
	JEQ  done
	ADDQ DX, CX
	CMPQ CX, SI
	JHI  done
	MOVL (CX), R13
	LEAQ (CX)(R13*1), DX
	CMPQ DX, SI
	JHI  done
	CMPQ R13, R14
	JNE  dims0

	// A permutation of 0..nd-1: for two dimensions 0, 1 (the
	// identity, as one 16-bit word), else see dimsN.
	CMPQ R13, $2
	JNE  dimsN
	CMPW 4(CX), $0x0100
	JNE  perm

data:
	// The work the value costs: ns + nd elements, and the record's.
	ADDQ R14, R13
	MOVQ laneRun_dbi(DI), DX
	MOVL (AX)(DX*1), CX
	ANDL laneRun_dbiMask(DI), CX
	JEQ  nodata

	// The data: its offset in the constant segment, and its bytes
	// within the segment (off + nbytes <= segLen, not carrying).
	CMPQ CX, laneRun_offN(DI)
	JCC  done
	MOVQ laneRun_offPos(DI), DX
	MOVQ (DX)(CX*8), DX
	MOVQ DX, CX
	ADDQ R15, CX
	JCS  done
	CMPQ CX, laneRun_segLen(DI)
	JHI  done
	ADDQ laneRun_cost(DI), R13
	SUBQ R13, R10
	JLT  undo

	// vt[v] = next; next++; the record.
	MOVQ laneRun_vtD(DI), CX
	MOVL R9, (CX)(R8*1)
	INCL R9
	ADDQ laneRun_segOff(DI), DX
	MOVQ DX, tensorRec_off(R11)
	MOVQ R15, tensorRec_nbytes(R11)
	SUBQ laneRun_fb(DI), AX
	MOVL AX, tensorRec_tensor(R11)
	MOVB $const_laneLocSegment, tensorRec_loc(R11)
	MOVB BX, tensorRec_dt(R11)
	ADDQ $tensorRec__size, R11
	ADDQ $4, R8
	CMPQ R8, laneRun_epEnd(DI)
	JCS  loop
	JMP  done

nodata:
	// No data in the file: checked, not kept.
	SUBQ R13, R10
	JLT  undo
	MOVQ laneRun_vtD(DI), CX
	MOVL $-1, (CX)(R8*1)
	ADDQ $4, R8
	CMPQ R8, laneRun_epEnd(DI)
	JCS  loop
	JMP  done

nodims:
	XORL R13, R13
	JMP  data

dims0:
	// No dim order (nd 0) is fine whatever the rank.
	TESTQ R13, R13
	JEQ  data
	JMP  done

dimsN:
	// Rank 0 has nothing to order. Otherwise the identity, read as one
	// word whose bytes past nd are masked off (laneMasks); else byte by
	// byte.
	TESTQ R13, R13
	JEQ  data
	CMPQ CX, laneRun_nm12(DI)
	JHI  perm
	MOVQ 4(CX), DX
	XORQ laneRun_ident(DI), DX
	MOVQ laneRun_masks(DI), R12
	ANDQ (R12)(R13*8), DX
	JNE  perm
	JMP  data

rank1:
	CMPQ R14, $1
	JNE  rank4
	MOVL 4(CX), R15
	TESTL R15, R15
	JMI  done
	JMP  product

rank0:
	XORL R14, R14
	MOVL $1, R15
	JMP  product

rank4:
	TESTQ R14, R14
	JEQ  rank0
	CMPQ R14, $4
	JNE  rank3
	MOVL 4(CX), R15
	MOVL 8(CX), DX
	MOVL R15, R12
	ORL  DX, R12
	IMULQ DX, R15
	CMPQ R15, laneRun_numLimit(DI)
	JHI  done
	MOVL 12(CX), DX
	MOVL 16(CX), R13
	ORL  DX, R12
	ORL  R13, R12
	JMI  done
	IMULQ R13, DX
	CMPQ DX, laneRun_numLimit(DI)
	JHI  done
	IMULQ DX, R15
	JMP  product

rank3:
	CMPQ R14, $3
	JNE  rankN
	MOVL 4(CX), R15
	MOVL 8(CX), DX
	MOVL 12(CX), R13
	MOVL R15, R12
	ORL  DX, R12
	ORL  R13, R12
	JMI  done
	IMULQ DX, R15
	CMPQ R15, laneRun_numLimit(DI)
	JHI  done
	IMULQ R13, R15
	JMP  product

rankN:
	// 5 to 8 sizes, as laneNumel: each one not negative, each running
	// product at most numLimit.
	MOVL $1, R15
	LEAQ (CX)(R14*4), DX

rankNLoop:
	MOVL 4(CX), R13
	TESTL R13, R13
	JMI  done
	IMULQ R13, R15
	CMPQ R15, laneRun_numLimit(DI)
	JHI  done
	ADDQ $4, CX
	CMPQ CX, DX
	JCS  rankNLoop
	JMP  product

perm:
	// Byte by byte: R12 walks them to SI (nm4 again after),
	// DX has a bit set for each seen.
	LEAQ 4(CX), R12
	LEAQ 4(CX)(R13*1), SI
	XORL DX, DX

permLoop:
	MOVBLZX (R12), CX
	CMPQ CX, R13
	JCC  done
	BTSQ CX, DX
	JCS  done
	INCQ R12
	CMPQ R12, SI
	JCS  permLoop
	MOVQ laneRun_nm4(DI), SI
	JMP  data

undo:
	// Over budget: the value is not read.
	ADDQ R13, R10

done:
	MOVQ R8, laneRun_ep(DI)
	MOVQ R9, laneRun_next(DI)
	MOVQ R10, laneRun_budget(DI)
	MOVQ R11, laneRun_recs(DI)
	RET
