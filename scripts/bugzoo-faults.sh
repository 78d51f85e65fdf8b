#!/usr/bin/env bash
# Bug zoo gate at the multi-host layer (RELIABILITY.md §6, test/faults).
# Each entry re-injects a bug into the krabka binary with its build tag
# (raft/bugzoo_<id>.go), runs a short fault campaign against that binary
# (TestCampaign, on Docker or network namespaces) and requires the
# campaign to FAIL with the finding named (lost acknowledged writes,
# duplicates, a non-linearizable history). The same campaign first runs
# with the same tags minus the zoo tag and must pass, so that a failure is
# the bug's doing. FAULTS_BASELINE=0 skips the baselines: scripts/test.sh
# runs this after go test, where TestCampaign (every fault, plain build)
# and TestKillRestart (writeback build, power failure) already passed.
#
#   scripts/bugzoo-faults.sh              # every entry whose hook exists
#   scripts/bugzoo-faults.sh z1 z5        # some entries
#   FAULTS_DURATION=60s scripts/bugzoo-faults.sh   # longer campaigns
#
# About 40 s per entry, plus one baseline per fault mix: about 6 minutes
# (under 4 without the baselines).
set -uo pipefail
cd "$(dirname "$0")/.."

SEED=${FAULTS_SEED:-1}

# One line per entry:
#   entry | other build tags | fault kinds | campaign length | invariant | failure text (ERE)
# Z1 and Z2 lose unsynced data only when a kill is a power loss, hence the
# writeback build, and only when a majority loses it at once, hence the
# power failure of every node. Z21 (a forwarded submission resent) lives
# where a SubmitChange is forwarded, in the embedded Controller.SubmitChange
# (over the wire a follower answers NOT_LEADER_OR_FOLLOWER): the campaign's
# embedded host, built with the same tags, forwards its clients' writes to
# the leader, and embedded-link drops the leader's answers to it while the
# writes commit, so that each forwarding times out and the bug sends the
# writes again. A kill of the leader catches it too, but only when a
# forwarded write had reached a majority and not yet been answered: about
# half the 30 s campaigns of kill-9-leader alone.
CHECKS=$(cat <<'LINES'
z1|writeback|kill-9-all|15s|K1 acknowledged writes survive a power failure (KAFKA-10533)|lost: .* is not in the committed log
z2|writeback|kill-9-all|15s|K1 acknowledged writes survive a power failure (etcd #14143)|lost: .* is not in the committed log
z5||isolate-leader,pause-leader|30s|K5 linearizable reads after a pause or leader change (etcd #20418)|porcupine: Illegal
z21||embedded-link|15s|K7 a forwarded submission is never resent on its own (Redpanda 21.10.1)|(duplicated|misplaced): .* in the committed log at
z22||isolate-leader,pause-leader|15s|K1 acknowledged means committed (Bufstream 0.1.0)|lost: .* is not in the committed log
LINES
)

if ! docker info >/dev/null 2>&1 && ! { [ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1; }; then
  msg="bugzoo-faults: no host back end (neither 'docker info' works nor can 'ip netns' be used)"
  if [ "${CI:-}" = true ]; then echo "$msg"; exit 1; fi
  echo "$msg; skipped"
  exit 0
fi

entries=("$@")
if [ ${#entries[@]} -eq 0 ]; then
  while IFS='|' read -r id _; do
    if grep -qs "^//go:build bugzoo_$id\$" raft/bugzoo_"$id".go; then
      entries+=("$id")
    else
      echo "bugzoo-faults: $id has no runtime hook (raft/bugzoo_$id.go) in this tree; not run"
    fi
  done <<<"$CHECKS"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$SECONDS
status=0

# campaign TAGS KINDS DURATION LOG: a short campaign of a binary built
# with TAGS.
campaign() {
  # Failing runs keep their artifacts under TMPDIR: the trap removes them.
  TMPDIR="$out" go test -count=1 -timeout 600s ./test/faults -run '^TestCampaign$' -args \
    -faults.tags="$1" -faults.kinds="$2" -faults.duration="${FAULTS_DURATION:-$3}" \
    -faults.seed="$SEED" -faults.recover=10s -faults.timeout=1s >"$4" 2>&1
}

declare -A base
for entry in "${entries[@]}"; do
  line=$(grep "^$entry|" <<<"$CHECKS")
  if [ -z "$line" ]; then
    echo "bugzoo-faults: unknown entry $entry"
    status=1
    continue
  fi
  IFS='|' read -r id tags kinds duration inv want <<<"$line"
  key="$tags|$kinds|$duration"
  if [ "${FAULTS_BASELINE:-1}" = 0 ]; then
    base[$key]=ok
  fi
  if [ -z "${base[$key]:-}" ]; then
    echo "== baseline: -tags '$tags' with $kinds for $duration"
    if campaign "$tags" "$kinds" "$duration" "$out/base.log"; then
      base[$key]=ok
      echo "  ok"
    else
      base[$key]=fail
      echo "  FAIL: the campaign fails without a zoo tag"
      grep -E -- '--- FAIL|_test.go:[0-9]+: ' "$out/base.log" | grep -v 'nemesis_test' | head -20 | sed 's/^/        /'
    fi
  fi
  echo "== ${id^^} (-tags ${tags:+$tags,}bugzoo_$id; $kinds; $duration)"
  if [ "${base[$key]}" != ok ]; then
    echo "  not judged: its baseline fails"
    status=1
    continue
  fi
  log="$out/$id.log"
  if campaign "${tags:+$tags,}bugzoo_$id" "$kinds" "$duration" "$log"; then
    echo "  NOT CAUGHT  the campaign passes with bugzoo_$id"
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
done

echo "== $((SECONDS - start))s"
if [ $status -ne 0 ]; then
  echo "bugzoo-faults: FAILED (a zoo build was not caught, or not for the right reason)"
  exit 1
fi
echo "bugzoo-faults: every entry run is caught"
