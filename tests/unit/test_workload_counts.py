"""The swept counts of the workloads (oltp threads, redis clients, the
scale-out and web store instances, the web store's open-loop rates) share
one validator, workloads.base.distinct_counts: every value from 1 to N,
none twice; the error names the field and the bound."""

import pytest
from pydantic import ValidationError

from isobench.workloads.oltp import OltpParams
from isobench.workloads.redis import RedisParams
from isobench.workloads.redis_scaleout import RedisScaleoutParams
from isobench.workloads.webstore import WebstoreParams

# (params model, field, N, what the values are, empty allowed, given order kept)
FIELDS = [
    (OltpParams, "threads", 4096, "counts", False, True),
    (RedisParams, "clients", 10_000, "counts", False, True),
    (RedisScaleoutParams, "instances", 64, "counts", False, False),
    (WebstoreParams, "instances", 64, "counts", False, False),
    (WebstoreParams, "rates", 100_000, "arrivals per second", True, False),
]
IDS = [f"{model.__name__}.{field}" for model, field, *_ in FIELDS]


@pytest.mark.parametrize(("model", "field", "top", "what", "empty", "given_order"), FIELDS, ids=IDS)
def test_good_counts_accepted(model, field, top, what, empty, given_order):
    assert getattr(model(**{field: [1, 2, top]}), field) == (1, 2, top)
    # an unsorted list is accepted: kept as given where the study's order is the cases' order, else sorted
    got = getattr(model(**{field: [top, 1, 2]}), field)
    assert got == ((top, 1, 2) if given_order else (1, 2, top))


@pytest.mark.parametrize(("model", "field", "top", "what", "empty", "given_order"), FIELDS, ids=IDS)
@pytest.mark.parametrize("bad", ["duplicate", "zero", "above"])
def test_bad_counts_refused(model, field, top, what, empty, given_order, bad):
    value = {"duplicate": [1, 2, 2], "zero": [0, 1], "above": [1, top + 1]}[bad]
    with pytest.raises(ValidationError) as err:
        model(**{field: value})
    (e,) = err.value.errors()
    assert e["loc"] == (field,)
    assert e["msg"] == f"Value error, {field} must be distinct {what} between 1 and {top}"


@pytest.mark.parametrize(("model", "field", "top", "what", "empty", "given_order"), FIELDS, ids=IDS)
def test_empty(model, field, top, what, empty, given_order):
    if empty:  # the web store without a rate sweep
        assert getattr(model(**{field: []}), field) == ()
    else:
        with pytest.raises(ValidationError, match=f"{field} must be distinct {what} between 1 and {top}"):
            model(**{field: []})
