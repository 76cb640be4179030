# SPDX-License-Identifier: BSD-2-Clause
"""`python -m cblob` runs the cblob program; the package reads well in help()."""
import pydoc
import subprocess
import sys

import cblob
from conftest import SAMPLES


def test_python_m_cblob_inspects_the_sample():
    result = subprocess.run([sys.executable, "-m", "cblob", "inspect", str(SAMPLES / "tiny_lenet.caffemodel")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "conv1" in result.stdout and "TinyLeNet" in result.stdout


def test_python_m_cblob_passes_the_exit_status_on():
    result = subprocess.run([sys.executable, "-m", "cblob", "inspect", "/nonexistent/x.caffemodel"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "x.caffemodel" in result.stderr


def test_help_reads_well():
    text = pydoc.render_doc(cblob, renderer=pydoc.plaintext)
    for needle in ("cblob.load(", "class Blob", "class Model", "load_blob(", "CblobError"):
        assert needle in text, needle
    assert all(getattr(cblob, name).__doc__ for name in ("Blob", "Model", "load", "load_blob", "save_blob"))
