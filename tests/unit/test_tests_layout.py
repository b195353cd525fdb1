"""The tests mirror the package (docs/testing.md, "Where the tests are"):
their folders are the package's, no two test files share a name (pytest
imports each by name, the folders hold no ``__init__.py``), and a test file
that imports another finds it in its own folder (pytest puts that folder on
``sys.path``, so the import works when the file runs alone)."""

import ast
from collections import Counter

from kit import PACKAGE, TESTS

FILES = sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_two_test_files_share_a_name():
    names = Counter(p.name for p in FILES if p.name != "conftest.py")
    assert [name for name, n in names.items() if n > 1] == []


def test_a_test_file_imports_other_test_files_from_its_own_folder():
    wrong = []
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            for name in names:
                if name and name.startswith("test_") and \
                        not (path.parent / f"{name.split('.')[0]}.py").is_file():
                    wrong.append(f"{path.relative_to(TESTS)}:{node.lineno} imports {name}")
    assert wrong == []


def test_the_test_folders_are_the_packages():
    engine = {p.name for p in (PACKAGE / "engine").iterdir() if (p / "__init__.py").is_file()}
    for folder, allowed in [("unit/engine", engine),
                            ("spark", engine | {"operators", "cli"}),
                            ("unit", {"core", "ops", "engine", "operators", "testing", "cli"})]:
        found = {p.name for p in (TESTS / folder).iterdir()
                 if p.is_dir() and p.name != "__pycache__"}
        assert found <= allowed, (folder, found - allowed)
