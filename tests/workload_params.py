"""Parameters every registered workload can be built with in a test that
loops over all of them: its defaults, and for a workload with a required
field the least a study gives it."""

REQUIRED = {"command": {"command": ["true"]}}


def default_params(name: str, cls):
    return cls.Params.model_validate(REQUIRED.get(name, {}))
