"""Runs a command as its child and writes what the kernel accounted to it, its waited-for
descendants included (wait4): user and system CPU seconds, peak resident set (KiB), wall
seconds, exit code. SIGTERM and SIGINT are passed on to the child, so the driver can stop a
long-lived one (Kafka Connect) and still get its figures.

usage: rusage.py OUT.json -- COMMAND [ARG ...]
"""
import json
import os
import signal
import subprocess
import sys
import time


def main():
    out, separator, command = sys.argv[1], sys.argv[2], sys.argv[3:]
    assert separator == "--" and command, __doc__
    started = time.monotonic()
    child = subprocess.Popen(command)
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda signum, _frame: child.send_signal(signum))
    while True:
        try:
            _, status, usage = os.wait4(child.pid, 0)
            break
        except ChildProcessError:
            raise
        except InterruptedError:
            continue
    wall = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    with open(out, "w", encoding="utf-8") as file:
        json.dump({"userS": usage.ru_utime, "sysS": usage.ru_stime, "maxRssKiB": usage.ru_maxrss, "wallS": wall, "exitCode": code}, file)
    sys.exit(0 if code == 0 else 1)


if __name__ == "__main__":
    main()
