"""Every MATCH_RECOGNIZE runtime test module (``test_match_*``) runs once per engine: with
``SBPY_MATCH_ENGINE=matcher`` (the reference matcher everywhere), ``=automaton`` (the deterministic
automaton wherever it is exact, driven by its runner) and ``=compiled`` (the automaton with the compiled
lane for in-order rows). ``test_match_automaton_*`` pick their engines themselves."""
import pytest

ENGINES = ("matcher", "automaton", "compiled")


def _per_engine(module_name: str) -> bool:
    name = module_name.rsplit(".", 1)[-1]
    return name.startswith("test_match_") and not name.startswith("test_match_automaton")


def pytest_generate_tests(metafunc):
    if _per_engine(metafunc.module.__name__):
        metafunc.parametrize("match_engine", ENGINES, indirect=True)


@pytest.fixture(autouse=True)
def match_engine(request, monkeypatch):
    """The engine a ``test_match_*`` test runs with (None elsewhere)."""
    engine = getattr(request, "param", None)
    if engine is not None:
        monkeypatch.setenv("SBPY_MATCH_ENGINE", engine)
    return engine
