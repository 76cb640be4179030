# SPDX-License-Identifier: BSD-2-Clause
"""The package's annotations: every public function, method and property is annotated (generated
ones by codegen/safe.py, hand-written ones by hand), mypy finds the package consistent, and a
user's program that uses the API the right way passes mypy --strict while one that misuses it
fails (so the annotations say something)."""
import importlib.util
import inspect
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cblob

PACKAGE = Path(cblob.__file__).resolve().parent


def public_callables():
    for name in cblob.__all__:
        obj = getattr(cblob, name)
        if inspect.isclass(obj):
            if issubclass(obj, (BaseException, int)) or obj.__module__.startswith("ctypes"):
                continue  # exceptions and enums: their methods are the built-ins'
            for attr, member in vars_of(obj):
                yield f"{name}.{attr}", member
        elif callable(obj):
            yield name, obj


def vars_of(cls):
    seen = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("cblob"):
            continue
        for attr, member in vars(klass).items():
            if attr in seen or (attr.startswith("_") and attr not in ("__init__", "__dlpack__")):
                continue
            seen.add(attr)
            if isinstance(member, property):
                yield attr, member.fget
            elif isinstance(member, (classmethod, staticmethod)):
                yield attr, member.__func__
            elif inspect.isfunction(member):
                yield attr, member


def test_every_public_callable_is_annotated():
    missing = []
    for name, function in public_callables():
        if not inspect.isfunction(function):
            continue
        signature = inspect.signature(function)
        for pname, p in signature.parameters.items():
            if pname in ("self", "cls") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.annotation is inspect.Parameter.empty:
                missing.append(f"{name}({pname})")
        if signature.return_annotation is inspect.Signature.empty and function.__name__ != "__init__":
            missing.append(f"{name} -> ?")
    assert not missing, f"{len(missing)} unannotated: {missing}"


def mypy(*args, cwd=None):
    # 3.10: the oldest Python mypy checks for; 3.9 itself runs the suite (bindings/python/test.sh).
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (scripts/python-env.sh installs it in numpy2)")
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", "/dev/null",
                           "--python-version", "3.10", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def test_mypy_finds_the_package_consistent(tmp_path):
    # A copy of the package alone: in site-packages mypy would read its neighbours too.
    shutil.copytree(PACKAGE, tmp_path / "cblob", ignore=shutil.ignore_patterns("*.so*", "bin", "__pycache__"))
    result = mypy("--ignore-missing-imports", "-p", "cblob", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


GOOD = """
    import numpy as np
    import cblob

    def total(path: str) -> float:
        model: cblob.Model = cblob.load(path, lazy=True)
        weights: np.ndarray = model["conv1"][0]
        blob: cblob.Blob = model.params["conv1"][0]
        blob.data[...] = weights * 2
        kept: int = model.replace_blobs_with(cblob.load(path))
        layers: list[cblob.Layer] = model.layers
        names: list[str] = layers[1].bottoms
        state: dict[str, np.ndarray] = model.state_dict("torch")
        with cblob.open_file(path) as file:
            kind: cblob.FileKind = file.kind
        return blob.asum() + kept + len(names) + len(state) + int(kind)
"""

BAD = """
    import cblob

    blob = cblob.Blob((2, 3))
    blob.reshape("2", "3")
    n: str = blob.count
    cblob.load(42)
"""


def test_a_user_program_type_checks_and_a_wrong_one_does_not(tmp_path):
    (tmp_path / "good.py").write_text(textwrap.dedent(GOOD))
    (tmp_path / "bad.py").write_text(textwrap.dedent(BAD))
    good = mypy("--strict", "--ignore-missing-imports", "good.py", cwd=tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = mypy("--ignore-missing-imports", "bad.py", cwd=tmp_path)
    assert bad.returncode == 1 and bad.stdout.count("error:") >= 3, bad.stdout
