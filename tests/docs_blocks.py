"""Run the ```python blocks of a Markdown file in one namespace."""

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
SPARK_MARK = "# needs spark"


def python_blocks(name: str):
    text = (DOCS / name).read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def run_blocks(name: str, *, spark: bool):
    namespace = {"__name__": f"docs_{name.replace('.', '_')}"}
    ran = 0
    for number, block in enumerate(python_blocks(name)):
        needs_spark = block.startswith(SPARK_MARK)
        if needs_spark and not spark:
            continue
        code = compile(block, f"{name}[block {number}]", "exec")
        exec(code, namespace)
        ran += 1
    return ran


def offline_namespace(name: str) -> dict:
    """The namespace after the offline blocks of ``name`` ran (their classes,
    data and results), for tests that run the same code on Spark."""
    namespace = {"__name__": f"docs_{name.replace('.', '_')}"}
    for number, block in enumerate(python_blocks(name)):
        if not block.startswith(SPARK_MARK):
            exec(compile(block, f"{name}[block {number}]", "exec"), namespace)
    return namespace
