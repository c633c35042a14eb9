"""A Ctrl-C during start-up that something swallows (numba's compiler calls back
into Python through ctypes, where an exception is printed and dropped) still ends
the run: once in a few tries a Ctrl-C a second after launch was lost and the run
trained all its epochs, exit 0."""
import ctypes
import signal
import sys
import time

import pytest

from hogwild.interrupts import interrupts_kept


def _interrupted():
    """SIGINT to this thread (raise(3): the main thread, whatever other threads the
    session started, so that Python's handler runs here and not after a loaded
    host gets round to another thread), then wait for the handler's exception."""
    signal.raise_signal(signal.SIGINT)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the handler's KeyboardInterrupt ends it
        pass
    raise AssertionError("SIGINT was not handled within 10 s")


@ctypes.CFUNCTYPE(None)
def _callback_interrupted():
    """A C callback (as llvmlite's object cache notifier) during which Ctrl-C lands."""
    _interrupted()


def test_a_ctrl_c_that_a_ctypes_callback_swallows_is_raised_where_start_up_ends(monkeypatch):
    ignored = []  # what Python printed as "Exception ignored on calling ctypes callback"
    monkeypatch.setattr(sys, "unraisablehook", lambda raised: ignored.append(raised.exc_type))
    _callback_interrupted()  # unprotected: swallowed, as in the lost runs
    assert ignored == [KeyboardInterrupt]
    with pytest.raises(KeyboardInterrupt):
        with interrupts_kept():
            _callback_interrupted()
    assert ignored == [KeyboardInterrupt] * 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_that_reached_its_catcher_is_not_raised_twice():
    with interrupts_kept():
        with pytest.raises(KeyboardInterrupt):
            with interrupts_kept():  # nested, as fit inside the command line
                _interrupted()
    # reached here: the block ended without raising it again
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_inside_llvmlites_object_cache_hook_waits_for_it_to_return(monkeypatch):
    """A Ctrl-C while LLVM handed a compiled object to numba's cache (through
    llvmlite's ctypes hook) printed "Exception ignored on calling ctypes callback
    function" with a traceback, and the object was not cached ("no compiled object
    yet"): the hook now finishes, and the Ctrl-C is raised as llvmlite returns."""
    import llvmlite.binding as llvm

    ignored = []
    monkeypatch.setattr(sys, "unraisablehook", lambda raised: ignored.append(raised.exc_type))
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly("define i32 @one() {\n  ret i32 1\n}\n")
    engine = llvm.create_mcjit_compiler(module, llvm.Target.from_default_triple()
                                        .create_target_machine())
    cached = []

    def notify(module, object_code):
        signal.raise_signal(signal.SIGINT)  # Python's handler has run when this returns
        cached.append(len(object_code))

    engine.set_object_cache(notify, lambda module: None)
    after = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_kept():
            engine.finalize_object()
            after.append("finalize_object returned")
    assert cached and cached[0] > 0 and after == [] and ignored == []
    assert sys.getprofile() is None
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


_INTERRUPTED_PYRUN = ("import ctypes\n"
                      "ctypes.pythonapi.PyRun_SimpleString(\n"
                      "    b'import signal; signal.raise_signal(signal.SIGINT)')\n")


@pytest.mark.parametrize("fake_cli", [
    _INTERRUPTED_PYRUN + "def main():\n    return 0\n",  # during the launcher's imports
    "import sys\ndef main():\n" + "".join(f"    {line}\n" for line in (
        _INTERRUPTED_PYRUN + "print('hogwild: interrupted', file=sys.stderr)\n"
        "return 130").splitlines()),  # in an import of the command's, which said so
], ids=["launcher-import", "command-import"])
def test_a_ctrl_c_inside_an_imports_pyrun_string_still_exits_130(tmp_path, fake_cli):
    """A Ctrl-C 0.25 s after launch, while a compiled module ran its PyRun_String on
    import, printed "hogwild: interrupted" and then the process died by SIGINT (exit
    -2): CPython remembers a KeyboardInterrupt raised in PyRun_String and kills
    itself at exit. So did a Ctrl-C at start-up of `hogwild run mc` (fault
    injection, 1 of 5), in an import of the command's. Both now exit 130."""
    import os
    import subprocess
    from pathlib import Path

    fake = tmp_path / "hogwild"  # a hogwild.cli interrupted in PyRun_String
    (fake / "cli").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "cli" / "__init__.py").write_text(fake_cli)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(Path(__file__).resolve().parent.parent)])}
    done = subprocess.run([sys.executable, "-m", "hogwild_launcher"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines()[-1] == "hogwild: interrupted", done.stderr
