"""What the tests of ``rasdf.asdf_hook`` share: every test starts and ends with asdf's
own code, and a call's outcome (result or error, and warnings) compared stock against
hooked. Import ``no_hook_left`` into a test module to make it apply there."""

import warnings

import pytest

from rasdf import asdf_hook


@pytest.fixture(autouse=True)
def no_hook_left():
    """Every test starts and ends with asdf's own loader."""
    asdf_hook.uninstall()
    yield
    asdf_hook.uninstall()
    assert not asdf_hook.is_installed()


def outcome(f):
    """`f()`'s result or its error (type and text), with the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = f(), None
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            result, error = None, (type(e), str(e))
    return result, error, sorted({(w.category.__name__, str(w.message)) for w in caught})


def both(f):
    """`f` run with asdf's loader, then with the hook: the two outcomes."""
    stock = outcome(f)
    with asdf_hook.installed():
        assert asdf_hook.is_installed()
        hooked = outcome(f)
    return stock, hooked
