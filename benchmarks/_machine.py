"""What the benchmark scripts say about the machine they ran on."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import platform


def cpu_name():
    """The CPU model from /proc/cpuinfo, else what ``platform`` knows."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu
