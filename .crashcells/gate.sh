#!/usr/bin/env bash
# The push gate: every cell on the default matrix. A known finding does not
# fail it; a new fire does, and is posted to the tracking issue.
set -uo pipefail
: "${TRACKING_ISSUE:?the issue that collects fires}"
# The store under test: $CRASHCELLS_CHILD, else .crashcells/child's first
# line (its command, run from the repository's root). Neither: refused, for
# a gate that checked the built-in reference store instead would be green
# without ever starting the team's store. `builtin` asks for that one.
child=${CRASHCELLS_CHILD:-$(sed -n '/^[^#]/{p;q}' .crashcells/child 2>/dev/null)}
if [ -z "$child" ]; then
    echo "no store named: set CRASHCELLS_CHILD or write .crashcells/child (its command, or builtin)" >&2
    exit 2
fi
store=(); [ "$child" = builtin ] || store=(--child "$child")
# One seed per CI run (every repro names it); a fresh one outside CI.
seed=${GITHUB_RUN_ID:-$(date +%s)}
crashcells run --seed "$seed" --known .crashcells/known.toml "${store[@]}" \
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
