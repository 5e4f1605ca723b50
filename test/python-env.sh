#!/usr/bin/env bash
# The Python readers the tests compare against, exactly as pinned, in a virtual environment
# of the project's own: nothing else on the machine changes them (a user's older botocore,
# a PYTHONPATH) or is changed by them. It lives in the shared download cache under the hash
# of the pins, so clones share it and a changed pin makes a new one; it is checked against
# the pins every time and completed when it is not what they say. Prints its folder.
# usage: bash test/python-env.sh [REQUIREMENTS]   (default: the tests' readers; the peers
# benchmark passes bench/peers/requirements.txt, a path from the repository's root)
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="${1:-test/integration/requirements-reader.txt}"
cache="${OFFSETLAKE_CACHE:-$HOME/.cache/offsetlake}"
venv="$cache/python-$(sha256sum "$requirements" | cut -c1-12)"
mkdir -p "$cache"
# what the environment imports, whatever the caller's Python settings
isolated() { env -u PYTHONPATH -u PYTHONHOME -u PYTHONSTARTUP PYTHONNOUSERSITE=1 "$@"; }
pinned() {
  isolated "$venv/bin/python" test/python_pins.py "$requirements" >&2 \
    && isolated "$venv/bin/python" -c 'import duckdb_ext, glob, os, sys
sys.exit(len(glob.glob(os.path.join(list(duckdb_ext.__path__)[0], "extensions", "v1.4.4", "*", "*.duckdb_extension"))) < 3)'
}
if [ -x "$venv/bin/python" ] && pinned 2>/dev/null; then echo "$venv"; exit 0; fi
# one set-up at a time per environment (two CI runs side by side share the cache)
exec 9>"$venv.lock"
flock 9
if ! { [ -x "$venv/bin/python" ] && pinned 2>/dev/null; }; then
  if [ ! -x "$venv/bin/python" ]; then
    rm -rf "$venv"
    if ! python3 -m venv "$venv" 2>/dev/null; then
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        rm -rf "$venv"
        apt-get install -y -qq python3-venv >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
        python3 -m venv "$venv"
      else
        echo "npm test needs Python's venv module: install it, e.g. sudo apt-get install python3-venv" >&2
        exit 1
      fi
    fi
  fi
  echo "python: installing the pinned readers into $venv" >&2
  isolated "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  if ! pinned; then
    echo "python: $venv still does not hold the pinned versions (above) after installing them" >&2
    exit 1
  fi
fi
echo "$venv"
