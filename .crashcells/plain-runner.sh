#!/usr/bin/env bash
# Share K of N of the audit on a plain shell CI: runs it, copies its report
# and evidence to $SHARED/$SEED (a place every runner reaches), prunes old runs.
set -uo pipefail
K=$K N=$N SEED=$SEED .crashcells/share.sh
code=$?
mkdir -p "$SHARED/$SEED"
cp -r "part-$K.json" "junit-$K.xml" evidence "$SHARED/$SEED/" 2>/dev/null
crashcells prune --evidence evidence --keep 10   # this runner's old runs
exit "$code"
