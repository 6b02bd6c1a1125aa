"""Test-wide settings. JAX must see 8 simulated CPU devices before it first initialises."""

import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _sandbox_must_work(request):
    """A test marked ``sandbox`` fails, never skips, where the grading sandbox does not work.

    `make test` promises the sandbox is tested; a broken or missing bubblewrap must show up as a
    failure that says why, not as a green run. (`make test-fast` deselects these tests.)
    """
    if request.node.get_closest_marker("sandbox") is None:
        return
    from autograder.sandbox import check_sandbox

    problem = check_sandbox()
    if problem is not None:
        pytest.fail(f"the grading sandbox does not work here: {problem} "
                    "(install Debian's bubblewrap: apt-get install bubblewrap)", pytrace=False)


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server for the session (tests/pgserver.py), stopped and removed at
    the end. Fails, never skips, where the server binaries are missing: the tests that use it
    are marked slow, so `make test-fast` deselects them."""
    from pgserver import PostgresServer, PostgresUnavailable

    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    with server:
        yield server


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (tests/live_browser.py) for one test module. Fails, never skips,
    where Debian's chromium or chromium-driver is missing."""
    import live_browser

    missing = live_browser.missing_browser()
    if missing:
        pytest.fail(f"the browser tests need Debian's chromium and chromium-driver; missing "
                    f"{', '.join(missing)} (apt-get install -y chromium chromium-driver)",
                    pytrace=False)
    with live_browser.chromium() as driver:
        yield driver


@pytest.fixture
def desktop(browser):
    """The module's Chromium at 1280 x 900, as a reader's laptop."""
    import live_browser as lb

    lb.viewport(browser, 1280, 900)
    lb.console_errors(browser)
    yield browser


@pytest.fixture
def phone(browser):
    """The module's Chromium as a 390 x 844 phone (touch, its meta viewport honoured)."""
    import live_browser as lb

    lb.viewport(browser, 390, 844, mobile=True)
    lb.console_errors(browser)
    yield browser
    lb.viewport(browser, 1280, 900)


def pytest_collection_modifyitems(config, items):
    """Files with slow tests first, each file's tests in their order: in a parallel run
    (``make test``, one file per worker at a time) the long files start early and the quick
    ones fill the last minutes, rather than one long file running on alone at the end."""
    by_file: dict = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)

    def has_slow(path) -> bool:
        return any(i.get_closest_marker("slow") for i in by_file[path])

    items[:] = [i for path in sorted(by_file, key=lambda p: not has_slow(p)) for i in by_file[path]]
