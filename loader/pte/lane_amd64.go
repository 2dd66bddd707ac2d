//go:build amd64 && !purego

package pte

// laneAsm says that laneLoop is the lane's loop in assembly. On amd64 the
// Go loop carries more values than Go gives registers, and spends a
// quarter of its instructions moving them to and from the stack; the
// assembly keeps the hot ones in registers and compares the others in
// memory. Build with -tags purego for the Go loop alone.
const laneAsm = true

// laneLoop reads the values whose offsets lie at a.ep ... a.epEnd-4 the
// lane way, stopping at the first it cannot read (see laneRun).
//
//go:noescape
func laneLoop(a *laneRun)
