#!/usr/bin/env bash
# Runs every check a change must pass: formatting, vet, staticcheck and the
# whole test suite under the race detector (conformance tests against Kafka's
# schemas and sample directories, property tests, fuzz seed corpora,
# scripted scenarios and simulations included).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...
# The measuring build (internal/latency) compiles its stamps into the hot
# paths: it must keep building.
go vet -tags krabkalatency ./...
# The side-by-side benchmark (bench/) is a module of its own, so that
# etcd's and ZooKeeper's client libraries stay out of the main module; it is
# vetted, hence compiled, on every run so it never rots, but not run.
(cd bench && go vet ./...)

echo "== staticcheck"
go tool staticcheck ./...

echo "== go test -race"
go test -race -timeout 25m ./...

# The allocation bounds of the hot paths (testing.AllocsPerRun) hold for
# the normal build; the race detector's build allocates differently, so
# some of them skip under -race and run here.
echo "== allocation bounds"
go test -count=1 -run 'Allocations|Allocs|NoAllocation|DoesNotAllocate|TestDecoderReusesFetch|AllocatesPerKey' ./...

# The measuring build's recorder, and the paths that stamp, under its tag.
echo "== measuring build"
go test -count=1 -tags krabkalatency ./internal/latency ./internal/transport

# Every bug of the zoo (the catalogue in internal/bugzoo) re-injected by
# its hook must be caught by the tests that guard its invariant. The build
# with the hooks (tag bugzoo) is vetted whole, so that it never rots.
echo "== bug zoo"
go vet -tags bugzoo ./...
./scripts/bugzoo.sh

# The runtime's zoo entries re-injected into the krabka binary must be
# caught by a short fault campaign on real processes (test/faults). Their
# baselines are test/faults' TestCampaign and TestKillRestart, which passed
# above.
echo "== bug zoo, multi-host"
FAULTS_BASELINE=0 ./scripts/bugzoo-faults.sh
