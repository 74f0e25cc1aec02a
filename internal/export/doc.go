// Package export carries the Queen's accepted work from the export API to
// GitHub: it downloads a branch's git bundle, imports it into a cached bare
// clone, applies the publisher's refusals, pushes the branch without ever
// destroying remote work, and opens its pull request
// (docs/export.md says what it keeps of the Queen's publisher and changes).
//
// The asynq tasks that call it live elsewhere; this package holds no queue
// and records nothing on a row itself: Publisher.Push returns an Outcome
// for the caller to record. Its one Redis key is Workers', which tells the
// API whether any worker runs the export.
package export
