"""``[core] hostname_callable`` of the distributed tier's workers.

Both test workers run on one host, so Airflow's default (the FQDN) would record the same
``task_instance.hostname`` for both; each worker is given its own name in its environment.
Kept apart from conftest so a task process imports nothing else of the tests.
"""

from __future__ import annotations

import os


def hostname() -> str:
    return os.environ["MODELGATE_TEST_WORKER_HOSTNAME"]
