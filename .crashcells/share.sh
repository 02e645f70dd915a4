#!/usr/bin/env bash
# Share K of N of the audit matrix; SEED is the same on every runner.
set -uo pipefail
: "${K:?}" "${N:?}" "${SEED:?}"
# When BUDGET runs out, timeout sends SIGINT: the driver kills its children,
# keeps the evidence gathered so far, writes a partial report and exits 130.
# --preserve-status passes that 130 on (plain `timeout` exits 124 instead);
# -k sends SIGKILL to a driver still running 2 minutes later.
timeout --preserve-status -s INT -k 2m "${BUDGET:-50m}" \
    crashcells run --matrix audit --seed "$SEED" --partition "$K/$N" \
    --known .crashcells/known.toml \
    --evidence evidence --format json --out "part-$K.json"
code=$?
if [ -f "part-$K.json" ]; then
    crashcells report --from "part-$K.json" --format junit --out "junit-$K.xml"
fi
exit "$code"
