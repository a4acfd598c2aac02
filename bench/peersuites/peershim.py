"""Make the peers' sources importable with Debian's Python 3.11 and packages.

Imported before a peer or a generator runs (bench/peersuites/*.py):

* typing_extensions.Buffer, which fickling imports on Python < 3.12 and Debian
  12's typing_extensions lacks, is bytes (it is only a type hint there);
* stub(name, attrs) installs a module whose callables pickle by reference as the
  real ones do (pickle stores functions and classes as module + name), for
  generators that pickle aiohttp.ClientSession or requests.get without calling
  them; nothing is ever unpickled.
"""

import sys
import types

import typing_extensions

if not hasattr(typing_extensions, "Buffer"):
    typing_extensions.Buffer = bytes


def stub(name, attrs=()):
    if name in sys.modules:
        return sys.modules[name]
    try:
        __import__(name)
        return sys.modules[name]
    except ImportError:
        pass
    m = types.ModuleType(name)
    for a in attrs:
        if a[:1].isupper():
            obj = type(a, (), {"__module__": name})
        else:
            def f(*args, **kw):
                raise RuntimeError("stub of a module not installed")
            f.__module__, f.__name__, f.__qualname__ = name, a, a
            obj = f
        setattr(m, a, obj)
    sys.modules[name] = m
    if "." in name:
        parent, _, child = name.rpartition(".")
        setattr(stub(parent), child, m)
    return m


def run_script(path):
    """Run a generator script as __main__ with the stubs a generator needs."""
    import runpy
    stub("aiohttp", ["ClientSession"])
    stub("requests", ["get"])
    sys.argv = [path]
    runpy.run_path(path, run_name="__main__")


if __name__ == "__main__":
    run_script(sys.argv[1])
