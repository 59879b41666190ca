"""The study's shared objects reach a worker process that is not the study's child (a ray worker): the manager's
key travels with them and is taken before any proxy is rebuilt, with no pickle inside the pickle."""

import inspect
import pickle
import subprocess
import sys

from critique.experiments.study import engines

WORKER = """
import pickle, sys
shared = pickle.loads(sys.stdin.buffer.read())
shared.request_stop()
print(shared.stop_requested())
"""


def test_a_process_with_another_key_reaches_the_study_manager():
    shared = engines.Processes({"fake": 2}, 2)
    try:
        assert not shared.stop_requested()
        # a fresh interpreter: its own random key, as a ray worker has
        done = subprocess.run([sys.executable, "-c", WORKER], input=pickle.dumps(shared), capture_output=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode().strip() == "True"
        assert shared.stop_requested()  # the worker's word reached the study's manager
    finally:
        shared.close()


def test_the_shared_objects_are_not_a_pickle_inside_the_pickle():
    source = inspect.getsource(engines)
    assert "import pickle" not in source and "pickle.loads" not in source
