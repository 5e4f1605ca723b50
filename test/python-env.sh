#!/usr/bin/env bash
# The Python readers the tests compare against, exactly as locked, in a virtual environment
# of the project's own: nothing else on the machine changes them (a user's older botocore,
# a PYTHONPATH) or is changed by them. It is installed from the lock beside the requirements
# file (X.txt -> X.lock.txt, made by test/python-lock.sh): every distribution, dependencies
# included, pinned `==` with the sha256 of each of its files, and pip refuses any download
# whose hash is not there (--require-hashes) and installs nothing the lock does not name
# (--no-deps). It lives in the shared download cache under the hash of the lock, so clones
# share it and a changed lock makes a new one; it is checked against the lock every time (every
# version, and nothing else installed) and completed when it is not what it says. Prints its folder.
# usage: bash test/python-env.sh [REQUIREMENTS]   (default: the tests' readers; the peers
# benchmark passes bench/peers/requirements.txt, a path from the repository's root)
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="${1:-test/integration/requirements-reader.txt}"
lock="${requirements%.txt}.lock.txt"
if [ ! -f "$lock" ]; then
  echo "python: no lock $lock beside $requirements: make it with bash test/python-lock.sh $requirements" >&2
  exit 1
fi
cache="${OFFSETLAKE_CACHE:-$HOME/.cache/offsetlake}"
venv="$cache/python-$(sha256sum "$lock" | cut -c1-12)"
mkdir -p "$cache"
# what the environment imports, whatever the caller's Python settings
isolated() { env -u PYTHONPATH -u PYTHONHOME -u PYTHONSTARTUP PYTHONNOUSERSITE=1 "$@"; }
pinned() {
  isolated "$venv/bin/python" test/python_pins.py "$lock" --exactly >&2 \
    && { ! grep -q '^duckdb-ext-' "$lock" || isolated "$venv/bin/python" -c 'import duckdb_ext, glob, os, sys
sys.exit(len(glob.glob(os.path.join(list(duckdb_ext.__path__)[0], "extensions", "v1.4.4", "*", "*.duckdb_extension"))) < 3)'; }
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
    # the setuptools Python <= 3.11 puts in a venv is not the lock's (the lock installs its own when it needs one)
    isolated "$venv/bin/python" -m pip uninstall --yes --quiet setuptools >&2 2>/dev/null || true
  fi
  echo "python: installing the locked readers into $venv (every file checked against $lock's sha256)" >&2
  pip_install() { isolated "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps "$@" >&2; }
  # An sdist in the lock (pyspark has no wheel) is built with the lock's setuptools, installed first,
  # and without build isolation: an isolated build would fetch its build tools unhashed.
  backend="$(mktemp)"
  trap 'rm -f "$backend"' EXIT
  awk '/^[^ #]/ { keep = /^setuptools==/ } keep' "$lock" >"$backend"
  if [ -s "$backend" ]; then pip_install -r "$backend"; fi
  pip_install --no-build-isolation -r "$lock"
  isolated "$venv/bin/python" -m pip check >&2
  if ! pinned; then
    echo "python: $venv still does not hold exactly what $lock pins (above) after installing them" >&2
    exit 1
  fi
fi
echo "$venv"
