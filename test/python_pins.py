"""Whether this Python imports exactly the versions a requirements file or lock pins
(`name==version` lines; a lock's `--hash` continuation lines and comments are skipped): names
each distribution that is missing or another version, as found first on sys.path (so one put
ahead of the environment's by PYTHONPATH counts), and exits 1 if any. With --exactly, also
names every distribution on sys.path the file does not pin (pip, the environment's installer,
excepted): an environment made from a lock holds nothing else.
usage: python test/python_pins.py FILE [--exactly]"""
import importlib.metadata
import re
import sys


def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


pins = {}
for line in open(sys.argv[1], encoding="utf-8"):
    pin = line.split("#", 1)[0].strip().rstrip("\\").strip()
    if not pin or pin.startswith("-"):
        continue
    name, _, version = pin.partition("==")
    pins[normalized(name)] = version

wrong = []
for name, version in pins.items():
    try:
        found = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        found = None
    if found != version:
        wrong.append(f"{name} {found or 'missing'} (pinned {version})")
if "--exactly" in sys.argv[2:]:
    installed = {normalized(dist.metadata["Name"]): dist.version for dist in importlib.metadata.distributions()}
    wrong += [f"{name} {version} (not pinned)" for name, version in sorted(installed.items()) if name not in pins and name != "pip"]
if wrong:
    print(f"{sys.prefix}: " + ", ".join(wrong))
    sys.exit(1)
