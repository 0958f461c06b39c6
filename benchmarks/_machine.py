"""What the machine was doing while a benchmark ran: load average and busy CPU seconds.

Standard library only, so that a benchmark whose child processes time their first import of
the package (``cold_start``) can use it without importing anything else first.

Example::

    before = busy_cpu_seconds(); ...; others = busy_cpu_seconds() - before - own_cpu_seconds()
"""

from __future__ import annotations

import os
import time

__all__ = ["loadavg", "busy_cpu_seconds", "own_cpu_seconds", "cpu_model"]


def loadavg() -> str:
    """The 1 / 5 / 15 minute load averages as ``"0.66/1.12/1.11"`` (``"n/a"`` where the
    platform has none)."""
    try:
        return "/".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover
        return "n/a"


def cpu_model() -> str:
    """The processor's model name (Linux ``/proc/cpuinfo``; ``platform.machine()`` elsewhere):
    results from two machines of one name ("2 CPUs, x86_64") differ by the processor, and
    booster and kernel do not gain alike from a faster one."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover
        pass
    import platform

    return platform.machine()


def busy_cpu_seconds() -> float | None:
    """Machine-wide busy CPU seconds so far (Linux /proc/stat; None elsewhere)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)   # idle + iowait
        return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):  # pragma: no cover
        return None


def own_cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + time.process_time()
