#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The generator refuses a kernel family without a CUDA twin, and names the template to write.

Copies codegen/ and templates/ (and the program's manual and README.md) into a temporary tree, adds a kernel to ops.yaml there with a CPU
template but no templates/cuda/ops/<name>.cu.j2, and expects generate.py to fail saying so; then
adds the twin and expects it to render the family's program.

usage: check_cuda_twin.py SOURCE_DIR
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KERNEL = """  - name: negate_for_test
    doc: "x[i] = -x[i]"
    params: ["T *x"]
    dtypes: [float32, int32]
    prefer: kernel
"""


def main():
    source = Path(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="cblob-twin-") as tmp:
        root = Path(tmp)
        shutil.copytree(source / "codegen", root / "codegen", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(source / "templates", root / "templates")
        # The program's manual and the README section rendered from it are outputs too.
        (root / "docs").mkdir()
        shutil.copy(source / "docs" / "cblob.1.md", root / "docs" / "cblob.1.md")
        shutil.copy(source / "README.md", root / "README.md")
        ops = root / "codegen" / "ops.yaml"
        ops.write_text(ops.read_text().replace("kernels:\n", "kernels:\n" + KERNEL, 1))
        (root / "templates" / "cpu" / "ops" / "negate_for_test.c.j2").write_text(
            "static cblob_status negate_for_test_{{ dt.suffix }}_vector(int64_t n, void *x_)\n"
            "{\n    {{ dt.ctype }} *x = x_;\n    for (int64_t i = 0; i < n; ++i)\n        x[i] = -x[i];\n"
            "    return CBLOB_OK;\n}\n")
        run = lambda: subprocess.run([sys.executable, str(root / "codegen" / "generate.py"), "--out", str(root / "out")],
                                     capture_output=True, text=True)
        result = run()
        if result.returncode == 0 or "templates/cuda/ops/<name>.cu.j2" not in result.stderr \
                or "negate_for_test" not in result.stderr:
            print(f"expected a failure naming the missing twin, got rc={result.returncode}:\n{result.stderr}")
            return 1
        (root / "templates" / "cuda" / "ops" / "negate_for_test.cu.j2").write_text(
            "{{ signature }}\n{\n    CB_FOR_EACH_INDEX(i, n)\n        x[i] = -x[i];\n}\n")
        result = run()
        program = root / "out" / "generated" / "cuda" / "negate_for_test.cu"
        if result.returncode != 0 or not program.exists():
            print(f"with the twin the generator should succeed:\n{result.stderr}")
            return 1
        text = program.read_text()
        for kernel in ("cblob_negate_for_test_f32(int64_t n, float *__restrict__ x)",
                       "cblob_negate_for_test_i32(int64_t n, int32_t *__restrict__ x)"):
            if kernel not in text:
                print(f"{program.name} lacks {kernel}")
                return 1
    print("a kernel without a CUDA twin is refused by name; one template file is enough to add it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
