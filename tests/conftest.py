import os
import signal

import pytest

# A shell starts background jobs with SIGINT ignored, an ignored signal stays
# ignored across exec, and Python then installs no KeyboardInterrupt handler:
# every `isobench run` the tests interrupt would never see its Ctrl-C when the
# suite itself was started in the background. A handled signal is reset to
# the default on exec, so the runs the tests start hear SIGINT again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    # Integration tests need root and the real engine; say why they are skipped
    # instead of failing obscurely when someone runs the suite as a user.
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="integration tests need root (Docker Engine, tmpfs, O_DIRECT)")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)
