"""CPU time of a command run as a child process, for the bench scripts that
judge the simulator's speed by CPU rather than wall time (bench/snapshot.sh,
bench/alternate.sh): user + system seconds, from the children's rusage
before and after, so the machine's other work does not count."""

import resource
import subprocess


def cpu_seconds(cmd):
    """Runs `cmd` (its output discarded, a failure raised) and returns its CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
