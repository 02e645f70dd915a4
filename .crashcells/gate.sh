#!/usr/bin/env bash
# The push gate: every cell on the default matrix. A known finding does not
# fail it; a new fire does, and is posted to the tracking issue.
set -uo pipefail
: "${TRACKING_ISSUE:?the issue that collects fires}"
# One seed per CI run (every repro names it); a fresh one outside CI.
seed=${GITHUB_RUN_ID:-$(date +%s)}
crashcells run --seed "$seed" --known .crashcells/known.toml \
    --evidence evidence --format json --out crashcells.json
code=$?
# No report means bad input (exit 2 before any child ran): nothing to post.
[ -f crashcells.json ] || exit "$code"
crashcells report --from crashcells.json --format junit --out crashcells.xml
# 1: a new fire, or a known finding gone; both are news for the issue.
if [ "$code" = 1 ]; then
    crashcells report --from crashcells.json --new-only --format markdown --out new.md
    gh issue comment "$TRACKING_ISSUE" --body-file new.md
fi
exit "$code"
