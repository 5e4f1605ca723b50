"""Exposition text (stdin) parsed by prometheus_client's own parser, printed as JSON:
[{name, type, help, samples: [{name, labels, value}]}]. Values that JSON cannot hold
(+Inf, NaN) are printed as their text."""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def number(value):
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return value


families = [
    {
        "name": family.name,
        "type": family.type,
        "help": family.documentation,
        "samples": [{"name": s.name, "labels": s.labels, "value": number(s.value)} for s in family.samples],
    }
    for family in text_string_to_metric_families(sys.stdin.read())
]
json.dump(families, sys.stdout)
