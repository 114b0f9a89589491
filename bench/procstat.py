"""The CPU a process spent, from /proc: in all, and by its threads' names.

One reading for the bench (serve_answers.py) and the e2e tests that watch serve's CPU
(serve_load.py, serve_attack.py). serve names its network thread `jr2-net` and its commit thread
`jr2-commit` (docs/runtime.md#two-threads); the engine's thread, and any other, keeps the process's
name and is counted as `engine`.
"""
import os

_TICK = os.sysconf("SC_CLK_TCK")


def _seconds(stat_text):
    """User + system CPU seconds of one /proc stat line, and the name in its parentheses."""
    head, tail = stat_text.rsplit(")", 1)
    fields = tail.split()
    return head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / _TICK


def process_cpu(pid):
    """User + system CPU seconds of process `pid` so far, all its threads (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        return _seconds(f.read())[1]


def threads_cpu(pid):
    """CPU seconds of process `pid`'s threads so far, by name: `jr2-…` as serve names them, every
    other thread as `engine`. Empty once the process is gone; a thread that ended is left out."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                name, seconds = _seconds(f.read())
        except OSError:
            continue
        name = name if name.startswith("jr2-") else "engine"
        out[name] = out.get(name, 0.0) + seconds
    return out


def spent(before, after):
    """What each thread name spent between two threads_cpu readings."""
    return {name: after[name] - before.get(name, 0.0) for name in after}
