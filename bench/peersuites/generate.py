#!/usr/bin/python3
"""Run the peers' test-file generators with Debian's Python into DIR/gen.

Usage: generate.py DIR   (DIR/src holds the restored sources; see bench/peer-suites.sh)

picklescan   tests/init_data_files.py, run on empty data directories
modelaudit   tests/assets/generators/*.py and tests/assets/pickles/bypass_pocs/*.py, run in a copy
modelscan    the fixtures of tests/test_modelscan.py that need no TensorFlow (file_path, zip_file_path,
             pytorch_file_path, numpy_file_path), called with stub modules for aiohttp, requests,
             tensorflow and tf_keras, whose callables pickle by reference as the real ones do
fickling     every Pickled object test/test_bypasses.py hands to check_safety, written out with the
             test (and subTest) it came from

Each generator that fails is reported and skipped; nothing is ever loaded or unpickled here.
"""

import importlib
import json
import os
import shutil
import subprocess
import sys
import types

DIR = sys.argv[1]
SRC = os.path.join(DIR, "src")
GEN = os.path.join(DIR, "gen")
report = {}


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peershim  # noqa: E402


def run_script(suite, script, cwd, env=None):
    r = subprocess.run([sys.executable, os.path.join(HERE, "peershim.py"), script], cwd=cwd, capture_output=True,
                       text=True, timeout=600, env=dict(os.environ, **(env or {})))
    ok = r.returncode == 0
    last = (r.stderr.strip().splitlines() or [""])[-1]
    report.setdefault(suite, []).append({"script": os.path.relpath(script, cwd), "ok": ok, "error": "" if ok else last})
    return ok


def picklescan():
    out = os.path.join(GEN, "picklescan", "tests")
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    os.makedirs(os.path.join(out, "data2"), exist_ok=True)
    shutil.copy(os.path.join(SRC, "picklescan", "tests", "init_data_files.py"), out)
    run_script("picklescan", os.path.join(out, "init_data_files.py"), out)
    os.remove(os.path.join(out, "init_data_files.py"))


def modelaudit():
    src = os.path.join(SRC, "modelaudit", "tests", "assets")
    dst = os.path.join(GEN, "modelaudit", "tests", "assets")
    os.makedirs(dst, exist_ok=True)
    for sub in ("generators", os.path.join("pickles", "bypass_pocs")):
        shutil.copytree(os.path.join(src, sub), os.path.join(dst, sub))
    for sub in ("generators", os.path.join("pickles", "bypass_pocs")):
        d = os.path.join(dst, sub)
        for f in sorted(os.listdir(d)):
            if f.endswith(".py"):
                run_script("modelaudit", os.path.join(d, f), d)
    for sub in ("generators", os.path.join("pickles", "bypass_pocs")):
        d = os.path.join(dst, sub)
        for f in os.listdir(d):
            if f.endswith(".py"):
                os.remove(os.path.join(d, f))


class Factory:
    def __init__(self, root):
        self.root = root

    def mktemp(self, name):
        p = os.path.join(self.root, name)
        os.makedirs(p, exist_ok=True)
        import pathlib
        return pathlib.Path(p)


def modelscan():
    root = os.path.join(SRC, "modelscan")
    sys.path[:0] = [root, os.path.join(root, "tests")]
    peershim.stub("aiohttp", ["ClientSession"])
    peershim.stub("requests", ["get"])
    tf = peershim.stub("tensorflow", [])
    tf.TensorSpec = lambda *a, **k: None
    tf.function = lambda *a, **k: (lambda f: f)
    tf.float32, tf.io, tf.data = None, types.SimpleNamespace(), types.SimpleNamespace()
    keras = peershim.stub("tf_keras", [])
    keras.Model = type("Model", (), {})
    try:
        t = importlib.import_module("test_modelscan")
    except Exception as e:  # noqa: BLE001
        report["modelscan"] = [{"script": "tests/test_modelscan.py", "ok": False, "error": repr(e)}]
        return
    out = os.path.join(GEN, "modelscan")
    f = Factory(out)
    done = []
    for name in ("file_path", "zip_file_path", "pytorch_file_path", "numpy_file_path"):
        fix = getattr(t, name)
        fn = getattr(fix, "__wrapped__", None) or getattr(getattr(fix, "__pytest_wrapped__", None), "obj", None)
        try:
            fn(f)
            done.append({"script": "tests/test_modelscan.py::" + name, "ok": True, "error": ""})
        except Exception as e:  # noqa: BLE001
            done.append({"script": "tests/test_modelscan.py::" + name, "ok": False, "error": repr(e)})
    for name in ("tensorflow_file_path", "keras_file_path"):
        done.append({"script": "tests/test_modelscan.py::" + name, "ok": False, "error": "needs TensorFlow and tf_keras (not in Debian)"})
    report["modelscan"] = done


def fickling():
    root = os.path.join(SRC, "fickling")
    sys.path[:0] = [root]
    import unittest
    import fickling.analysis as analysis

    out = os.path.join(GEN, "fickling", "test_bypasses")
    os.makedirs(out, exist_ok=True)
    state = {"test": "", "sub": "", "n": 0}
    real = analysis.check_safety

    def capture(pickled, *a, **k):
        state["n"] += 1
        name = state["test"] + ("__" + state["sub"] if state["sub"] else "") + "__%d" % state["n"]
        name = "".join(c if c.isalnum() or c in "_-." else "_" for c in name)[:150]
        try:
            with open(os.path.join(out, name + ".pkl"), "wb") as fh:
                fh.write(pickled.dumps())
        except Exception:  # noqa: BLE001
            pass
        return real(pickled, *a, **k)

    mod = importlib.import_module("test.test_bypasses")
    mod.check_safety = capture
    real_subtest = unittest.TestCase.subTest

    import contextlib

    @contextlib.contextmanager
    def subtest(self, msg=None, **params):
        state["sub"] = str(msg or "") + "_".join("%s=%s" % kv for kv in params.items())
        with real_subtest(self, msg, **params):
            yield
        state["sub"] = ""

    unittest.TestCase.subTest = subtest
    results = []
    for cname in dir(mod):
        cls = getattr(mod, cname)
        if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)):
            continue
        for tname in sorted(n for n in dir(cls) if n.startswith("test")):
            state.update(test=tname, sub="", n=0)
            r = unittest.TestResult()
            cls(tname).run(r)
            results.append({"script": "test/test_bypasses.py::%s.%s" % (cname, tname), "ok": r.wasSuccessful(),
                            "error": "" if r.wasSuccessful() else (r.errors + r.failures)[0][1].strip().splitlines()[-1]})
    report["fickling"] = results


for fn in (picklescan, modelaudit, modelscan, fickling):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        report.setdefault(fn.__name__, []).append({"script": fn.__name__, "ok": False, "error": repr(e)})
with open(os.path.join(GEN, "report.json"), "w") as f:
    json.dump(report, f, indent=1)
for suite, runs in report.items():
    ok = sum(r["ok"] for r in runs)
    print("%-11s %d/%d generators ran" % (suite, ok, len(runs)))
    for r in runs:
        if not r["ok"]:
            print("   failed: %s: %s" % (r["script"], r["error"][:160]))
