// Package sandbox is a local stand-in for everything queen-app talks to
// besides Redis: GitHub (REST, GraphQL, the App's installation tokens, signed
// webhooks, and git over smart HTTP backed by real bare repositories in a
// folder) and the Queen's export API (real git bundles of a real work
// repository). Everything listens on loopback ports and lives in one folder.
//
// `queenctl demo` and the end-to-end tests assemble it with Start; the
// test adapters internal/githubtest and internal/gittest wrap its parts for
// tests. Nothing here imports testing: constructors return errors and each
// part has a Close.
package sandbox
