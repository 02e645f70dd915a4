#!/usr/bin/env bash
# The whole audit from its N shares (part-1.json ... part-N.json, here):
# its JUnit, the job page's summary, and the new fires posted.
set -uo pipefail
: "${N:?}" "${TRACKING_ISSUE:?}"
from=(); for k in $(seq 1 "$N"); do from+=(--from "part-$k.json"); done
crashcells report "${from[@]}" --format junit --out crashcells.xml
# A share missing or not of this run: said once, by the first merge.
code=$?; [ "$code" = 2 ] && exit 2
crashcells report "${from[@]}" --format markdown --out crashcells.md --step-summary
code=$?
if [ "$code" = 1 ]; then
    crashcells report "${from[@]}" --new-only --format markdown --out new.md
    gh issue comment "$TRACKING_ISSUE" --body-file new.md
fi
exit "$code"
