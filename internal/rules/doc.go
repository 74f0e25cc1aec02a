// Package rules holds the Queen's decision cards as small pure functions:
// holds (which files a dispatch still shuts others out of), claim (what a
// finished dispatch still claims), review valve (what happens to work that
// was not accepted) and review first (what the dispatcher may start while
// finished work waits in review).
//
// Each exported function names the card function it implements. The package
// does no I/O and imports nothing of the project: callers convert rows and
// clocks at the boundary (see Minutes and VerdictOf) and pass plain values.
package rules
