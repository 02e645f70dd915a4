#!/usr/bin/env bash
# Puts crashcells on PATH from a package or a release, never from a checkout
# of crashcells: a team's repository holds only .crashcells/. What it
# installs is kept in a cache folder under a key made of the version, the
# machine, the way and the package asked for, so a later job with the same
# key downloads nothing.
#
#   install.sh key   prints the key (to $GITHUB_OUTPUT as `key=...` when set)
#   install.sh       installs into $CRASHCELLS_CACHE/<key> on a miss, puts
#                    its bin/ on PATH ($GITHUB_PATH when set) and prints it
#                    (for `export PATH="$(.crashcells/install.sh):$PATH"`)
#
# CRASHCELLS_VERSION the version to install (default: the one below, the
#                    version this kit was copied from)
# CRASHCELLS_FROM    pip (the default): `pip install crashcells==VERSION` in
#                    a virtualenv, whose python3 then runs a store written
#                    on the crashcells Python library; npm: `npm i -D
#                    crashcells@VERSION` in the repository (node_modules/.bin
#                    on PATH, no cache: npm keeps its own); release: the
#                    release binary, its sha256 checked
# CRASHCELLS_PACKAGE what pip or npm installs instead: a wheel or package
#                    file, or its URL
# CRASHCELLS_RELEASE a release's download URL (setting it means release)
# CRASHCELLS_CACHE   the cache folder (default ~/.cache/crashcells); on
#                    GitHub the path actions/cache restores and saves
set -euo pipefail
version=${CRASHCELLS_VERSION:-0.1.0}
from=${CRASHCELLS_FROM:-$([ -n "${CRASHCELLS_RELEASE:-}" ] && echo release || echo pip)}
cache=${CRASHCELLS_CACHE:-$HOME/.cache/crashcells}
target=$(uname -m)-linux
case $from in
pip) package=${CRASHCELLS_PACKAGE:-crashcells==$version} ;;
npm) package=${CRASHCELLS_PACKAGE:-crashcells@$version} ;;
release) package=${CRASHCELLS_RELEASE:-} ;;
*) echo "CRASHCELLS_FROM=$from: not one of pip, npm, release" >&2; exit 2 ;;
esac
if [ -z "$package" ]; then echo "CRASHCELLS_FROM=release: set CRASHCELLS_RELEASE to the release's download URL" >&2; exit 2; fi
# The package asked for is part of the key: another wheel is another install.
key=crashcells-$version-$target-$from-$(printf %s "$package" | sha256sum | cut -c 1-16)
if [ "${1:-}" = key ]; then
    if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "key=$key" >> "$GITHUB_OUTPUT"; fi
    echo "$key"
    exit 0
fi

root=$cache/$key
bin=$root/bin
if [ "$from" = npm ]; then
    npm i -D --no-fund --no-audit "$package" >&2
    bin=$PWD/node_modules/.bin
elif [ -f "$root/done" ]; then
    echo "crashcells $version: cached ($key)" >&2
elif [ "$from" = pip ]; then
    # A virtualenv is not relocatable: it is made where it stays, and only
    # the `done` mark written last makes it a hit for a later job.
    rm -rf "$root"
    python3 -m venv "$root"
    "$root/bin/python3" -m pip install -q --disable-pip-version-check "$package" >&2
    touch "$root/done"
else
    name=crashcells-$version-$target.tar.gz
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    curl -fsSL -o "$tmp/$name" "$package/$name"
    curl -fsSL -o "$tmp/$name.sha256" "$package/$name.sha256"
    (cd "$tmp" && sha256sum -c "$name.sha256" >&2)
    rm -rf "$root" && mkdir -p "$root/bin"
    tar -xzf "$tmp/$name" -C "$root/bin"
    touch "$root/done"
fi
"$bin/crashcells" --version >&2
if [ -n "${GITHUB_PATH:-}" ]; then echo "$bin" >> "$GITHUB_PATH"; fi
echo "$bin"
