#!/usr/bin/env bash
# Share K of N of the audit matrix; SEED is the same on every runner.
set -uo pipefail
: "${K:?}" "${N:?}" "${SEED:?}"
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
# When BUDGET runs out, timeout sends SIGINT: the driver kills its children,
# keeps the evidence gathered so far, writes a partial report and exits 130.
# --preserve-status passes that 130 on (plain `timeout` exits 124 instead);
# -k sends SIGKILL to a driver still running 2 minutes later.
timeout --preserve-status -s INT -k 2m "${BUDGET:-50m}" \
    crashcells run --matrix audit --seed "$SEED" --partition "$K/$N" "${store[@]}" \
    --known .crashcells/known.toml \
    --evidence evidence --format json --out "part-$K.json"
code=$?
if [ -f "part-$K.json" ]; then
    crashcells report --from "part-$K.json" --format junit --out "junit-$K.xml"
fi
exit "$code"
