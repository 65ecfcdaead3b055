"""Teardown removes a container or volume even when the engine refuses for a
moment, and says why when it never could."""

import docker.errors

from isobench.core import dockerclient as dk


class Flaky:
    def __init__(self, failures: int, error: Exception):
        self.failures, self.error, self.calls = failures, error, []

    def remove(self, **kwargs):
        self.calls.append(kwargs)
        if len(self.calls) <= self.failures:
            raise self.error


def test_a_removal_that_fails_for_a_moment_is_retried(monkeypatch):
    monkeypatch.setattr(dk.time, "sleep", lambda s: None)
    item = Flaky(2, docker.errors.APIError("removal of container x is already in progress"))
    assert dk.remove_retrying(item, v=True) is None
    assert len(item.calls) == 3 and all(c == {"force": True, "v": True} for c in item.calls)


def test_gone_is_removed(monkeypatch):
    monkeypatch.setattr(dk.time, "sleep", lambda s: None)
    item = Flaky(1, docker.errors.NotFound("no such container"))
    assert dk.remove_retrying(item) is None and len(item.calls) == 1


def test_a_removal_that_never_works_says_why_once_bounded(monkeypatch):
    slept = []
    monkeypatch.setattr(dk.time, "sleep", slept.append)
    item = Flaky(99, docker.errors.APIError("driver overlay2 failed to remove root filesystem\nbusy"))
    problem = dk.remove_retrying(item)
    assert "failed to remove root filesystem" in problem and "\n" not in problem
    assert len(item.calls) == len(dk.REMOVE_TRIES) + 1 and sum(slept) < 10


def test_an_engine_that_does_not_answer_is_not_waited_for(monkeypatch):
    slept = []
    monkeypatch.setattr(dk.time, "sleep", slept.append)
    item = Flaky(99, ConnectionError("('Connection aborted.', FileNotFoundError(2, 'No such file'))"))
    assert "Connection aborted" in dk.remove_retrying(item)
    assert len(item.calls) == 1 and slept == []
