"""Schema 7 (issue 11, clear words): a seed the classifier got wrong is `misclassified`,
not `failed` (which reads as "the campaign failed"); `non_viable` is `non-viable`. An old
store's seeds are renamed on open; a failed *campaign* stays `failed`."""

from __future__ import annotations

from pathlib import Path

from store import SCHEMA_VERSION, Store, maintenance
from store import campaigns as sc
from store.schema import SEED_STATUSES
from tests.helpers import old_store


def test_a_version_6_store_gets_the_new_seed_statuses(tmp_path: Path):
    path = old_store(
        tmp_path / "v6.duckdb",
        6,
        "CREATE TABLE campaigns (id VARCHAR PRIMARY KEY, status VARCHAR)",
        "CREATE TABLE seeds (campaign_id VARCHAR, seed_idx INTEGER, status VARCHAR)",
        "INSERT INTO campaigns VALUES ('c', 'failed')",
        "INSERT INTO seeds VALUES ('c', 0, 'failed'), ('c', 1, 'non_viable'), "
        "('c', 2, 'survived'), ('c', 3, 'interrupted')",
    )
    store = Store(path)
    assert maintenance.schema_info(store)["schema_version"] == str(SCHEMA_VERSION)
    seeds = store.query("SELECT status FROM seeds ORDER BY seed_idx")["status"].tolist()
    assert seeds == ["misclassified", "non-viable", "survived", "interrupted"]
    assert set(seeds) <= set(SEED_STATUSES)
    assert store.query("SELECT status FROM campaigns")["status"].tolist() == ["failed"]


def test_a_recovery_folder_from_an_older_version_is_ingested_in_todays_words(tmp_path):
    """Rows a campaign of an older latentfuzz saved while it waited for the store carry
    its seed statuses; ingesting them renames them like the schema 7 migration."""
    import pyarrow as pa

    from store import Store, recovery

    store = Store(tmp_path / "latentfuzz.duckdb")
    seeds = pa.table(
        {
            "seed_idx": [0, 1],
            "source_index": [0, 1],
            "seed_label": [3, 4],
            "seed_pred": [3, 4],
            "seed_margin": [1.0, 1.0],
            "viable": [True, False],
            "status": ["searching", "non_viable"],
        }
    )
    upd = pa.table({"seed_idx": [0], "status": ["failed"], "misclassified": [True]})
    recovery.save(tmp_path, "c", {"seeds": seeds}, upd, {"status": "finished"})
    assert recovery.ingest(store) == ["c"]
    assert sc.seeds(store, "c")["status"].tolist() == ["misclassified", "non-viable"]
