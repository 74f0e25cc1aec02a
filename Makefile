.PHONY: test mutate bench

test:
	go vet ./...
	go test ./...

# Breaks every rule of internal/rules once and requires a failing test for each.
mutate:
	go run ./tools/mutate -write docs/mutation.md

# One pass of the whole grid per op; a million calls for the per-call benchmarks.
bench:
	go test -run '^$$' -bench 'Grid' -benchtime 1x ./internal/rules/
	go test -run '^$$' -bench 'ClaimOf|VerdictOf' -benchtime 1000000x ./internal/rules/
