"""Launching commands from the tests: Open MPI's mpirun (from its wheel, beside
this Python, or on PATH), as root where the tests run as root, and the hogwild
console script (beside this Python, or on PATH: a venv's python runs the suite
without the venv being activated)."""
import os
import shutil
import subprocess
import sys

from hogwild.limits import usable_cores

MPIRUN = shutil.which("mpirun", path=os.pathsep.join([os.path.dirname(sys.executable),
                                                      os.environ.get("PATH", "")]))
CONSOLE_SCRIPT = shutil.which("hogwild", path=os.pathsep.join(
    [os.path.dirname(sys.executable), os.environ.get("PATH", "")]))


# A job must end, not hang. Two ranks start in 2-7 s on an idle host and took up to
# 53 s beside a second test suite and a busy loop on every core: a hang is told from
# a slow start by this deadline, and "within seconds" is timed from the failure
# itself where a test can see it.
JOB_DEADLINE = 300


def mpirun(ranks, command, timeout=JOB_DEADLINE, fault_tolerant=False, **popen):
    """``mpirun -n RANKS COMMAND`` (as root where the tests run as root; with
    ``fault_tolerant``, a job that a rank's death does not end: ULFM)."""
    launcher = [MPIRUN, "-n", str(ranks)] + (["--with-ft", "ulfm"] if fault_tolerant else [])
    if os.geteuid() == 0:
        launcher.append("--allow-run-as-root")
    if ranks > usable_cores():
        launcher.append("--oversubscribe")
    if popen.pop("background", False):
        return subprocess.Popen(launcher + command, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, **popen)
    return subprocess.run(launcher + command, capture_output=True, text=True,
                          timeout=timeout, **popen)


def mpmd(first, second):
    """``mpirun -n 1 FIRST : -n 1 SECOND`` (two ranks running different command
    lines): the completed process, once the job ended."""
    command = [MPIRUN, "-n", "1", *first, ":", "-n", "1", *second]
    if os.geteuid() == 0:
        command.insert(1, "--allow-run-as-root")
    return subprocess.run(command, capture_output=True, text=True, timeout=JOB_DEADLINE)
