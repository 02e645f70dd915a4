#!/usr/bin/env bash
# The audit's merge on a plain shell CI, once every share is in $SHARED/$SEED.
set -uo pipefail
scripts=$PWD/.crashcells
cd "$SHARED/$SEED" && N=$N "$scripts/merge.sh"
