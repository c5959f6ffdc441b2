"""LlamaIndex's workflows list their steps with ``inspect.getmembers`` on pydantic models,
which warns about deprecated pydantic attributes on every run, with or without RAC: not ours
to fix, so not shown."""


def pytest_configure(config):  # type: ignore[no-untyped-def]
    config.addinivalue_line("filterwarnings", r"ignore::DeprecationWarning:inspect")
