"""Whether this Python imports exactly the versions a requirements file pins (`name==version`
lines): names each distribution that is missing or another version, as found first on
sys.path (so one put ahead of the environment's by PYTHONPATH counts), and exits 1 if any."""
import importlib.metadata
import sys

wrong = []
for line in open(sys.argv[1], encoding="utf-8"):
    pin = line.split("#", 1)[0].strip()
    if not pin:
        continue
    name, _, version = pin.partition("==")
    try:
        found = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        found = None
    if found != version:
        wrong.append(f"{name} {found or 'missing'} (pinned {version})")
if wrong:
    print(f"{sys.prefix}: " + ", ".join(wrong))
    sys.exit(1)
