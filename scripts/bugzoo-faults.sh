#!/usr/bin/env bash
# Bug zoo gate at the multi-host layer (test/faults). Every entry of the
# zoo's catalogue (package internal/bugzoo) that lists a fault campaign is
# re-injected into the krabka binary (and the embedded hosts' program):
# built with the tag bugzoo and the entry selected at link time. The
# script runs the campaign (TestCampaign, on Docker or network
# namespaces) and requires it to FAIL with the finding the catalogue names
# (lost acknowledged writes, duplicates, a non-linearizable history). The
# same campaign first runs with the same tags and no entry selected and
# must pass, so that a failure is the bug's doing. FAULTS_BASELINE=0 skips
# the baselines: scripts/test.sh runs this after go test, where
# TestCampaign (every fault, plain build) and TestKillRestart (writeback
# build, power failure) already passed.
#
#   scripts/bugzoo-faults.sh              # every entry with a campaign
#   scripts/bugzoo-faults.sh z1 z5        # some entries
#   FAULTS_DURATION=60s scripts/bugzoo-faults.sh   # longer campaigns
#
# About 40 s per entry, plus one baseline per fault mix: about 5 minutes
# (under 4 without the baselines).
set -uo pipefail
cd "$(dirname "$0")/.."

SEED=${FAULTS_SEED:-1}

if ! docker info >/dev/null 2>&1 && ! { [ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1; }; then
  msg="bugzoo-faults: no host back end (neither 'docker info' works nor can 'ip netns' be used)"
  if [ "${CI:-}" = true ]; then echo "$msg"; exit 1; fi
  echo "$msg; skipped"
  exit 0
fi

# One line per campaign: id|ldflags|tags|kinds|duration|invariant|pattern
if ! CHECKS=$(go run ./internal/bugzoo/cmd/zoo campaigns "$@"); then
  exit 1
fi
if [ -z "$CHECKS" ]; then
  echo "bugzoo-faults: no fault campaign listed for ${*:-any entry}"
  exit 1
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$SECONDS
status=0

# campaign ENTRY TAGS KINDS DURATION LOG: a short campaign of a binary
# built with TAGS and the bug-zoo entry ENTRY (none if empty).
campaign() {
  # Failing runs keep their artifacts under TMPDIR: the trap removes them.
  TMPDIR="$out" go test -count=1 -timeout 600s ./test/faults -run '^TestCampaign$' -args \
    -faults.bugzoo="$1" -faults.tags="$2" -faults.kinds="$3" -faults.duration="${FAULTS_DURATION:-$4}" \
    -faults.seed="$SEED" -faults.recover=10s -faults.timeout=1s >"$5" 2>&1 </dev/null
}

declare -A base
while IFS='|' read -r id _ tags kinds duration inv want; do
  key="$tags|$kinds|$duration"
  if [ "${FAULTS_BASELINE:-1}" = 0 ]; then
    base[$key]=ok
  fi
  if [ -z "${base[$key]:-}" ]; then
    echo "== baseline: -tags '${tags:+$tags,}bugzoo', no entry selected, with $kinds for $duration"
    if campaign "" "${tags:+$tags,}bugzoo" "$kinds" "$duration" "$out/base.log"; then
      base[$key]=ok
      echo "  ok"
    else
      base[$key]=fail
      echo "  FAIL: the campaign fails with no entry selected"
      grep -E -- '--- FAIL|_test.go:[0-9]+: ' "$out/base.log" | grep -v 'nemesis_test' | head -20 | sed 's/^/        /'
    fi
  fi
  echo "== ${id^^} (-tags ${tags:+$tags,}bugzoo, $id selected; $kinds; $duration)"
  if [ "${base[$key]}" != ok ]; then
    echo "  not judged: its baseline fails"
    status=1
    continue
  fi
  log="$out/$id.log"
  if campaign "$id" "$tags" "$kinds" "$duration" "$log"; then
    echo "  NOT CAUGHT  the campaign passes with $id selected"
    status=1
    continue
  fi
  found=$(grep -E -m1 -- "$want" "$log")
  if [ -z "$found" ]; then
    printf '  WRONG FAILURE  the campaign fails, but not with /%s/ (%s):\n' "$want" "$inv"
    grep -E -- '--- FAIL|_test.go:[0-9]+: ' "$log" | grep -v 'nemesis_test' | head -20 | sed 's/^/        /'
    status=1
    continue
  fi
  printf '  caught  invariant: %s\n          %s\n' "$inv" "$(echo "$found" | sed -E 's/^[[:space:]]*//' | cut -c1-200)"
done <<<"$CHECKS"

echo "== $((SECONDS - start))s"
if [ $status -ne 0 ]; then
  echo "bugzoo-faults: FAILED (a zoo build was not caught, or not for the right reason)"
  exit 1
fi
echo "bugzoo-faults: every entry run is caught"
