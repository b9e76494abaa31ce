"""The store's shape: all SQL in store/, no import circles inside it, and no engine import;
plus the store functions only doctor and the scale benchmark call."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from store import Store, maintenance, scale
from store.writer import create_campaign, now

ROOT = Path(__file__).resolve().parents[2]
SQL = re.compile(
    r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b|\.execute(many)?\(|\.sql\(|import duckdb"
)


def _imports(path: Path) -> set[str]:
    """The store modules `path` imports, in function bodies too (an import moved into a
    function hides a circle, it does not break it)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("store"):
            if node.module == "store":
                out |= {
                    f"store.{a.name}" for a in node.names if (path.parent / f"{a.name}.py").exists()
                }
            else:
                out.add(node.module)
    return out


def test_the_engine_issues_no_sql():
    hits = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in sorted((ROOT / "engine").rglob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if SQL.search(line)
    ]
    assert hits == []


def test_store_modules_import_no_circle_and_no_engine():
    modules = {f"store.{p.stem}": p for p in (ROOT / "store").glob("*.py") if p.stem != "__init__"}
    graph = {m: _imports(p) & set(modules) for m, p in modules.items()}
    for m, p in modules.items():
        tree = ast.parse(p.read_text())
        names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [n for n in names if n.split(".")[0] == "engine"], m

    def visit(m: str, path: list[str]) -> None:
        for d in graph[m]:
            assert d not in path, " -> ".join([*path, d])
            visit(d, [*path, d])

    for m in graph:
        visit(m, [m])


#: One individuals row of campaign 'src': seed 0, generation 1, slot 0.
ROW = "('src', 0, 1, 0, 0.5, 3, true, NULL, NULL)"


def _campaign(store: Store, cid: str) -> None:
    create_campaign(
        store,
        {
            "id": cid,
            "name": cid,
            "status": "finished",
            "created_at": now(),
            "dataset": "mnist",
            "generator": "vae",
            "classifier": "lenet5",
            "strategy": "ga",
            "n_seeds": 1,
            "random_seed": 0,
            "config": {},
            "environment": {},
            "dir": f"campaigns/{cid}",
        },
    )


def test_scale_clones_campaigns_with_their_rows():
    store = Store()
    _campaign(store, "src")
    with store.write() as con:
        con.execute(f"INSERT INTO individuals VALUES {ROW}, {ROW.replace('1, 0,', '1, 1,')}")
    scale.clone(store, [("src", "x000000", "s"), ("src", "x000001", None)])
    assert scale.clone_count(store) == 2
    assert scale.row_count(store, "individuals") == 6
    assert scale.individuals_per_campaign(store).to_dict() == {"src": 2, "x000000": 2, "x000001": 2}
    scale.checkpoint(store)


@pytest.mark.parametrize("copies", [0, 2])
def test_maintenance_counts_and_drops_duplicated_rows(copies: int):
    store = Store()
    _campaign(store, "c")
    with store.write() as con:
        for _ in range(1 + copies):  # individuals has no key index (store/schema.py UNINDEXED)
            con.execute(f"INSERT INTO individuals VALUES {ROW.replace('src', 'c')}")
    assert maintenance.duplicated_keys(store, "individuals") == (1 if copies else 0)
    assert maintenance.duplicate_rows(store, "individuals") == copies
    with store.write() as con:
        assert maintenance.drop_duplicate_rows(con, "individuals") == copies
    assert maintenance.duplicate_rows(store, "individuals") == 0
    assert scale.row_count(store, "individuals") == 1
    assert maintenance.schema_info(store)["schema_version"].isdigit()
