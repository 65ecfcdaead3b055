import os

import pytest


def pytest_collection_modifyitems(config, items):
    # Integration tests need root and the real engine; say why they are skipped
    # instead of failing obscurely when someone runs the suite as a user.
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="integration tests need root (Docker Engine, tmpfs, O_DIRECT)")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)
