#!/usr/bin/env bash
# Bug zoo gate. Each zoo entry is a real bug another system shipped,
# re-injected into our code behind a hook (package internal/bugzoo, whose
# catalogue lists every entry, its hooks and the tests that must catch
# it). For every entry this script runs those tests in a build with the
# tag bugzoo and the entry selected at link time, and requires each to
# FAIL with the failure text the catalogue names. It exits non-zero if a
# selected entry passes a catching test, or fails it for another reason (a
# build error, a panic, a different invariant). Pending entries (no hook
# yet) and entries caught only by fault campaigns
# (scripts/bugzoo-faults.sh) are reported, not run.
#
# The same tests first run in a bugzoo build with nothing selected and
# must pass, so that a failure with an entry selected is its doing.
#
#   scripts/bugzoo.sh                 # every entry
#   scripts/bugzoo.sh z4 z17          # some entries
#   SIM_SEEDS=500 scripts/bugzoo.sh   # a longer simulator campaign
#   go run ./internal/bugzoo/cmd/zoo list   # the entries and their commands
#
# About a minute on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."

SIM_SEEDS=${SIM_SEEDS:-200}
SIM_STEPS=${SIM_STEPS:-1500}

zoo=$(mktemp -d)
trap 'rm -rf "$zoo"' EXIT
if ! go build -o "$zoo/zoo" ./internal/bugzoo/cmd/zoo; then
  echo "bugzoo: cannot build the catalogue's command"
  exit 1
fi
if ! ENTRIES=$("$zoo/zoo" entries "$@") ||
   ! CHECKS=$("$zoo/zoo" checks -seeds "$SIM_SEEDS" -steps "$SIM_STEPS" "$@"); then
  exit 1
fi
out="$zoo/logs"
mkdir -p "$out"
start=$SECONDS
status=0

# run LDFLAGS PKG RUN FLAGS LOG: go test in a bugzoo build.
run() {
  # shellcheck disable=SC2086 # $4 holds several test flags.
  go test -count=1 -timeout 240s -tags bugzoo -ldflags="$1" "$2" -run "$3" -args $4 >"$5" 2>&1 </dev/null
}

echo "== baseline: the catching tests pass in a bugzoo build with no entry selected"
declare -A seen
while IFS='|' read -r id ldflags pkg pat flags inv want; do
  [ -n "$id" ] || continue
  key="$pkg|$pat"
  [ -n "${seen[$key]:-}" ] && continue
  seen[$key]=1
  if run "" "$pkg" "$pat" "$flags" "$out/base.log"; then
    printf '  ok    %-14s %s\n' "${pkg#./internal/}" "$pat"
  else
    printf '  FAIL  %-14s %s: fails with no entry selected\n' "${pkg#./internal/}" "$pat"
    sed 's/^/        /' "$out/base.log" | head -20
    status=1
  fi
done <<<"$CHECKS"
if [ $status -ne 0 ]; then
  echo "bugzoo: the baseline fails; a failure with an entry selected would prove nothing"
  exit 1
fi

caught=0 pending=0 faultsonly=0
while IFS='|' read -r entry nchecks ncampaigns ispending; do
  if [ "$ispending" = 1 ]; then
    printf '== %s pending: %s\n' "${entry^^}" "$("$zoo/zoo" pending "$entry" | cut -d'|' -f2)"
    pending=$((pending + 1))
    continue
  fi
  if [ "$nchecks" = 0 ]; then
    printf '== %s caught by fault campaigns only (scripts/bugzoo-faults.sh %s)\n' "${entry^^}" "$entry"
    faultsonly=$((faultsonly + 1))
    continue
  fi
  echo "== ${entry^^} (go test -tags bugzoo, $entry selected)"
  n=0 ok=1
  while IFS='|' read -r id ldflags pkg pat flags inv want; do
    [ "$id" = "$entry" ] || continue
    n=$((n + 1))
    log="$out/$id-$n.log"
    name="${pkg#./internal/} ${pat//[\^\$]/}"
    if run "$ldflags" "$pkg" "$pat" "$flags" "$log"; then
      printf '  NOT CAUGHT  %s passes with %s selected\n' "$name" "$id"
      status=1 ok=0
      continue
    fi
    line=$(grep -E -m1 -- "$want" "$log")
    if [ -z "$line" ]; then
      printf '  WRONG FAILURE  %s fails, but not with /%s/ (%s):\n' "$name" "$want" "$inv"
      sed 's/^/        /' "$log" | head -20
      status=1 ok=0
      continue
    fi
    # A simulator failure line starts with the seed's options: keep the seed.
    line=$(echo "$line" | sed -E 's/^[[:space:]]*//; s/^(sim_test\.go:[0-9]+: seed [0-9]+) \([^)]*\): /\1: /' | cut -c1-240)
    printf '  caught  %s\n          invariant: %s\n          %s\n' "$name" "$inv" "$line"
    replay=$(grep -m1 -o 'replay: .*' "$log" | sed "s|go test |go test -tags bugzoo -ldflags=$ldflags |")
    if [ -n "$replay" ]; then printf '          %s\n' "$replay"; fi
  done <<<"$CHECKS"
  [ $ok = 1 ] && caught=$((caught + 1))
done <<<"$ENTRIES"

echo "== $((SECONDS - start))s: $caught caught, $faultsonly caught by fault campaigns only, $pending pending"
if [ $status -ne 0 ]; then
  echo "bugzoo: FAILED (an entry was not caught, or not for the right reason)"
  exit 1
fi
echo "bugzoo: every entry with a hook and a test is caught"
