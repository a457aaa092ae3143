"""What the benchmark scripts say about the machine they ran on."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import platform
import subprocess


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


def git_version(where):
    """The short hash of the commit checked out at ``where``, else "unknown"."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=where,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
