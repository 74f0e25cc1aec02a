.PHONY: test test-ts build version mutate bench fuzz soak

# The release is internal/version.Version, its one home; a release from a tag
# builds with VERSION from the tag, which must agree (release.yml checks).
# The Dockerfile's go build is this one (TestDockerfileBuildsWhatMakeBuilds).
MODULE = github.com/queen-app/queen-app
VERSION ?= $(shell sed -n 's/^[[:space:]]*Version = "\(.*\)"$$/\1/p' internal/version/version.go)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
OUT ?= bin

test:
	go vet ./...
	go test ./...

# The TypeScript client (clients/typescript): its generated types must be
# what docs/openapi.yaml makes now, and its tests run the built webhook with
# a private redis-server, on Node and on Bun (a devDependency). Needs node
# 20+ and npm (the npm registry for npm ci).
# Bun is optional (npm ci does not install it): the tests run on Bun too
# only when bun is on PATH.
test-ts:
	cd clients/typescript && npm ci --no-audit --no-fund && npm run check-types && npm test
	if command -v bun >/dev/null 2>&1; then cd clients/typescript && npm run test:bun; else echo "test-ts: bun not on PATH: the Bun run is skipped"; fi

# The three binaries, static, for GOOS/GOARCH from the environment.
build:
	CGO_ENABLED=0 go build -trimpath -o $(OUT)/ -ldflags "-s -w -X $(MODULE)/internal/version.Version=$(VERSION) -X $(MODULE)/internal/version.Commit=$(COMMIT)" ./cmd/webhook ./cmd/worker ./cmd/queenctl

version:
	@echo $(VERSION)

# Breaks each rule of internal/rules, each decision of the claim view, the
# ledger's transitions and the export's checks once, and requires a failing
# test for each; rewrites docs/mutation.md. About 10 minutes on the 2 shared
# cores of the dev machine (each mutant builds its package's test binary).
mutate:
	go run ./tools/mutate -write docs/mutation.md

# Every figure of tools/benchreport/figures.go (issue 11's targets, the
# rules, the ledger), written to docs/benchmarks.md with its baseline, ratio,
# target, command and the machine. About 8 minutes: the export drain alone
# paces 213 PR creations a second apart.
bench:
	go run ./tools/benchreport -out docs/benchmarks.md

# Each fuzz target for FUZZTIME; -fuzz takes one target of one package at a
# time. New inputs are minimized for 5 s: with the default 60 s a run sat at
# 0 execs/s for most of its minute, minimizing instead of fuzzing. A crasher
# is written to the package's testdata/fuzz/, which `go test` then replays.
# Go 1.26 can end a clean run with a bare "context deadline exceeded" and no
# input written (go.dev/issue/75804, fixed in Go 1.27): that is not a crasher.
FUZZTIME ?= 60s
FUZZ = go test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
fuzz:
	$(FUZZ) -fuzz '^FuzzVerifySignature$$' ./internal/ghevents/
	$(FUZZ) -fuzz '^FuzzWebhook$$' ./internal/ghevents/
	$(FUZZ) -fuzz '^FuzzScanner$$' ./internal/ghevents/
	$(FUZZ) -fuzz '^FuzzString$$' ./internal/redact/
	$(FUZZ) -fuzz '^FuzzQueenBranch$$' ./internal/dispatch/
	$(FUZZ) -fuzz '^FuzzApply$$' ./internal/dispatch/
	$(FUZZ) -fuzz '^FuzzBoundary$$' ./internal/export/
	$(FUZZ) -fuzz '^FuzzSnapshot$$' ./internal/replay/
	$(FUZZ) -fuzz '^FuzzParse$$' ./internal/replay/
	$(FUZZ) -fuzz '^FuzzImportLine$$' ./cmd/queenctl/
	$(FUZZ) -fuzz '^FuzzBatchAnswer$$' ./internal/githubapp/

# The e2e model-based test (TestModelSequences) for SOAK_CHECKS sequences of
# at most SOAK_STEPS steps instead of make test's 200 of 10, from SOAK_SEED
# (0: a new seed each run).
# A failure prints the -rapid.seed that replays it and writes a fail file
# under e2e/testdata/rapid/. A sequence took 0.15 s with the worker polling
# asynq every 50 ms (1.4 s at asynq's default 1 s): 10,000 take ~25 min.
SOAK_CHECKS ?= 10000
SOAK_STEPS ?= 10
SOAK_SEED ?= 0
soak:
	go test ./e2e -run '^TestModelSequences$$' -count 1 -timeout 12h -v \
		-rapid.checks $(SOAK_CHECKS) -rapid.steps $(SOAK_STEPS) -rapid.seed $(SOAK_SEED)
