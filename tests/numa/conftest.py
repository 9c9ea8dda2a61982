import os

import pytest

from tacker_hwaffinity.numa.subjects import Pod

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def expand_dump(name, root):
    """Expand a recorded sysfs dump (data/<name>) into a directory tree under ROOT."""
    files = {}
    with open(os.path.join(DATA, name)) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.endswith("/") and ":" not in line:
                os.makedirs(os.path.join(root, line), exist_ok=True)
                continue
            path, _, content = line.partition(":")
            files.setdefault(path, []).append(content)
    for path, lines in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write("\n".join(lines) + "\n")
    return str(root)


@pytest.fixture
def sysfs(tmp_path):
    def make(name):
        return expand_dump(name, tmp_path / name.replace(".txt", ""))
    return make


def make_pod(name="p", namespace="default", containers=("c",), **kw):
    pod = Pod(name, namespace, **kw)
    for c in containers:
        pod.add_container(c)
    return pod
