"""How a run is told to stop (stopping.py), with the CLI's handlers installed and real signals."""

import os
import signal

import pytest

from adri_pipeline.stopping import one_stop


def test_a_signal_after_a_stopped_run_left_its_block_is_only_noted(stop_handlers, capsys):
    """A burst of Ctrl+C: the first stops the run, and one landing after the run's block was left but
    before the program had said it was leaving escaped as "interrupted (Ctrl+C)" and a traceback."""
    with one_stop():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            signal.sigtimedwait([], 0)  # let the handler run here
    os.kill(os.getpid(), signal.SIGINT)  # would raise here before the fix
    signal.sigtimedwait([], 0)
    assert "already stopping" in capsys.readouterr().err
    with one_stop():  # a new run starts afresh: its first signal stops it
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            signal.sigtimedwait([], 0)


def test_a_signal_after_a_run_that_finished_still_interrupts(stop_handlers):
    with one_stop():
        pass
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 0)
