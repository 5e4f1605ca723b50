#!/usr/bin/env bash
# Regenerates the locks test/python-env.sh installs from: every distribution a requirements
# file brings, its dependencies' dependencies included, pinned `==` with the sha256 of every
# file PyPI holds for that version (each platform's wheel and the sdist), by pip-tools'
# pip-compile --generate-hashes, run from a virtual environment outside the repository.
# Review the diff (new names, versions) before committing it.
# usage: bash test/python-lock.sh [REQUIREMENTS...]   (default: both; each X.txt gives X.lock.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${OFFSETLAKE_CACHE:-$HOME/.cache/offsetlake}"
tools="$cache/pip-tools-7.7.0"
if [ ! -x "$tools/bin/pip-compile" ]; then
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check pip-tools==7.7.0
fi
[ "$#" -gt 0 ] || set -- test/integration/requirements-reader.txt bench/peers/requirements.txt
for requirements in "$@"; do
  # the header names this script; PIP_FIND_LINKS (a machine's local wheels) stays out of the lock
  CUSTOM_COMPILE_COMMAND="bash test/python-lock.sh $requirements" "$tools/bin/pip-compile" --quiet \
    --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
    --output-file "${requirements%.txt}.lock.txt" "$requirements"
done
