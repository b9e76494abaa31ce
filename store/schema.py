"""DuckDB schema. Bump SCHEMA_VERSION with every change and add its step to MIGRATIONS below."""

from __future__ import annotations

SCHEMA_VERSION = 13

DDL = [
    """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS campaigns (
        id VARCHAR NOT NULL PRIMARY KEY,
        name VARCHAR,
        status VARCHAR NOT NULL,          -- running | finished | interrupted | failed | crashed
        created_at TIMESTAMP NOT NULL,
        finished_at TIMESTAMP,
        dataset VARCHAR NOT NULL,
        generator VARCHAR NOT NULL,       -- zoo name
        classifier VARCHAR NOT NULL,      -- zoo name or TorchScript path
        strategy VARCHAR NOT NULL,
        preset VARCHAR,                   -- the strategy's perturbation preset, if any
        n_seeds INTEGER NOT NULL,
        target_class INTEGER,
        random_seed BIGINT NOT NULL,
        config JSON NOT NULL,             -- the validated config, as given to the runner
        environment JSON NOT NULL,        -- model hashes, library versions, host
        dir VARCHAR NOT NULL,             -- campaign folder, relative to the home
        pid INTEGER,
        error VARCHAR,
        wall_seconds DOUBLE,
        store_seconds DOUBLE,             -- writer time inside the store (benchmarks, contract)
        evaluations BIGINT,
        study VARCHAR,                    -- the study this campaign belongs to, if any
        classifier_b VARCHAR,             -- differential campaigns: the second classifier
        kind VARCHAR DEFAULT 'native'     -- native | imported (another tool's results, schema 9)
    )""",
    """CREATE TABLE IF NOT EXISTS seeds (
        campaign_id VARCHAR NOT NULL,
        seed_idx INTEGER NOT NULL,
        source_index INTEGER,             -- dataset test index, -1 when sampled
        seed_label INTEGER NOT NULL,      -- intended (expected) label
        seed_pred INTEGER NOT NULL,       -- classifier's label for the seed image
        seed_margin DOUBLE NOT NULL,
        viable BOOLEAN NOT NULL,
        -- non-viable | searching | misclassified | survived | interrupted (SEED_STATUSES)
        status VARCHAR NOT NULL,
        misclassified BOOLEAN,
        iterations INTEGER,               -- generations run (to the first failure, or budget)
        evaluations BIGINT,
        final_pred INTEGER,
        final_fitness DOUBLE,
        final_top1 DOUBLE,
        final_top2 DOUBLE,
        latent_distance DOUBLE,           -- L2 between result latent and seed latent
        seed_image VARCHAR,
        result_image VARCHAR,
        improvements_image VARCHAR,       -- strip of the best image at each improvement
        elapsed_s DOUBLE,
        target INTEGER,                   -- class a targeted search must reach (schema 6)
        seed_pred_b INTEGER,              -- classifier B's label for the seed (schema 8)
        final_pred_b INTEGER,             -- classifier B's label for the result (schema 8)
        -- imported campaigns: the tool's per-image fields with no column here (perturbation
        -- sizes, run, its image number, file name), as a JSON object (schema 9)
        params JSON,
        PRIMARY KEY (campaign_id, seed_idx)
    )""",
    """CREATE TABLE IF NOT EXISTS generations (
        campaign_id VARCHAR NOT NULL,
        seed_idx INTEGER NOT NULL,
        generation INTEGER NOT NULL,      -- 1 = the initial population
        best_fitness DOUBLE NOT NULL,
        mean_fitness DOUBLE NOT NULL,
        best_pred INTEGER NOT NULL,
        top1_label INTEGER NOT NULL,
        top1_prob DOUBLE NOT NULL,
        top2_label INTEGER NOT NULL,
        top2_prob DOUBLE NOT NULL,
        step DOUBLE NOT NULL,             -- the step that bred this population's children
        evaluations BIGINT NOT NULL,      -- cumulative for this seed
        elapsed_s DOUBLE NOT NULL,        -- since campaign start
        image VARCHAR,                    -- when the best improved: the seed's strip PNG
        image_frame INTEGER,              -- ... and this generation's frame in it (0-based)
        best_pred_b INTEGER,              -- classifier B's label for the best (schema 8)
        PRIMARY KEY (campaign_id, seed_idx, generation)
    )""",
    """CREATE TABLE IF NOT EXISTS individuals (
        campaign_id VARCHAR NOT NULL,
        seed_idx INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        individual INTEGER NOT NULL,      -- slot in the population
        fitness DOUBLE NOT NULL,
        pred INTEGER NOT NULL,
        evaluated BOOLEAN NOT NULL,       -- false for survivors carried with their score
        pred_b INTEGER,                   -- classifier B's label (schema 8)
        objective2 DOUBLE                 -- a multi-objective strategy's second objective
        -- No PRIMARY KEY (schema 11): see UNINDEXED.
    )""",
    """CREATE TABLE IF NOT EXISTS images (
        campaign_id VARCHAR NOT NULL,
        seed_idx INTEGER NOT NULL,
        kind VARCHAR NOT NULL,            -- seed | result
        path VARCHAR NOT NULL,            -- relative to the home
        PRIMARY KEY (campaign_id, seed_idx, kind)
    )""",
    # Human labelling (validity and label preservation). Answers are class indices, or
    # -1 for "not a valid <domain> image" and -2 for "unsure" (engine/labelling/agreement.py).
    """CREATE TABLE IF NOT EXISTS label_studies (
        id VARCHAR PRIMARY KEY,
        name VARCHAR,
        created_at TIMESTAMP NOT NULL,
        dataset VARCHAR NOT NULL,
        source VARCHAR NOT NULL,          -- campaigns | import
        k INTEGER NOT NULL,               -- answers wanted per item
        rule VARCHAR NOT NULL,            -- icst | majority
        seed BIGINT NOT NULL,             -- sampling, labeller orders and bootstrap
        resamples INTEGER NOT NULL,       -- bootstrap resamples
        config JSON NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS label_items (
        study_id VARCHAR NOT NULL,
        item_id INTEGER NOT NULL,
        kind VARCHAR NOT NULL,            -- result | seed | gold | imported
        campaign_id VARCHAR,
        seed_idx INTEGER,
        generator VARCHAR,
        preset VARCHAR,                   -- perturbation level
        image VARCHAR,                    -- relative to the home (or the imported URL)
        expected INTEGER,                 -- the label the image should keep (gold: true)
        predicted INTEGER,                -- the classifier's label (never shown)
        iterations INTEGER,
        external_id VARCHAR,              -- the ID column of an imported study
        predicted_b INTEGER,              -- classifier B's label (triggering inputs, schema 8)
        PRIMARY KEY (study_id, item_id)
    )""",
    """CREATE TABLE IF NOT EXISTS labellers (
        study_id VARCHAR NOT NULL,
        labeller VARCHAR NOT NULL,
        order_seed BIGINT NOT NULL,       -- this labeller's fixed presentation order
        joined_at TIMESTAMP NOT NULL,
        PRIMARY KEY (study_id, labeller)
    )""",
    """CREATE TABLE IF NOT EXISTS judgements (
        study_id VARCHAR NOT NULL,
        item_id INTEGER NOT NULL,
        labeller VARCHAR NOT NULL,
        answer INTEGER NOT NULL,
        raw VARCHAR,                      -- the imported text, when imported
        position INTEGER,                 -- 1 = the first image this labeller answered
        shown_at TIMESTAMP,
        answered_at TIMESTAMP NOT NULL,
        seconds DOUBLE,                   -- time from showing to answering
        PRIMARY KEY (study_id, item_id, labeller)
    )""",
    """CREATE TABLE IF NOT EXISTS label_claims (
        study_id VARCHAR NOT NULL,
        item_id INTEGER NOT NULL,
        labeller VARCHAR NOT NULL,
        claimed_at TIMESTAMP NOT NULL,    -- shown to this labeller; expires after a while
        PRIMARY KEY (study_id, item_id, labeller)
    )""",
    """CREATE TABLE IF NOT EXISTS adjudications (
        study_id VARCHAR NOT NULL,
        item_id INTEGER NOT NULL,
        reviewer VARCHAR NOT NULL,
        answer INTEGER NOT NULL,          -- settles validity and preservation of the item
        note VARCHAR,
        decided_at TIMESTAMP NOT NULL,
        PRIMARY KEY (study_id, item_id)
    )""",
    # Schema 5 (issue 13): per-campaign metrics, written once when a campaign finishes
    # (engine/campaign/metrics.py defines each figure).
    """CREATE TABLE IF NOT EXISTS campaign_metrics (
        campaign_id VARCHAR NOT NULL PRIMARY KEY,
        evaluations BIGINT NOT NULL,      -- search evaluations (seed images not counted)
        failing_evaluations BIGINT NOT NULL,
        error_rate DOUBLE,                -- failing / all evaluations
        success_rate DOUBLE,              -- viable seeds with a failure / viable seeds
        label_diversity DOUBLE,           -- mean distinct wrong labels reached per seed
        mean_mse DOUBLE,                  -- result vs seed image, pixels in [0, 1]
        mean_ssim DOUBLE,                 -- Gaussian 11x11, sigma 1.5, data range 1
        failures_per_1k DOUBLE,           -- seeds with a failure per 1,000 evaluations
        result_gap_median DOUBLE,         -- top-1 minus top-2 probability, result images
        test_gap_median DOUBLE,           -- the same on the dataset's test images
        result_gaps JSON NOT NULL,        -- per viable seed
        test_gaps JSON NOT NULL,
        -- per generation: step (lambda), evaluations, error rate, MSE and SSIM to the seed
        per_generation JSON NOT NULL,
        -- schema 6: the classifier's test-set confusion counts [true][predicted]
        test_confusion JSON,
        -- schema 8: differential campaigns' figures (engine/campaign/triggering.py)
        differential JSON,
        -- schema 13: FID and KID in the default classifier's features, not Inception's
        -- (engine/campaign/realism.py)
        realism JSON
    )""",
    # Schema 8 (issue 14): every distinct failing input of a campaign with `archive` on.
    """CREATE TABLE IF NOT EXISTS archive (
        campaign_id VARCHAR NOT NULL,
        entry INTEGER NOT NULL,           -- 0-based, in the order found
        seed_idx INTEGER NOT NULL,        -- the search (seed) that found it
        generation INTEGER NOT NULL,
        label INTEGER NOT NULL,           -- the seed's intended label
        pred INTEGER NOT NULL,            -- classifier A's label
        pred_b INTEGER,                   -- classifier B's label (differential campaigns)
        fitness DOUBLE NOT NULL,
        image VARCHAR NOT NULL,           -- relative to the home
        PRIMARY KEY (campaign_id, entry)
    )""",
    # Validity filters' scores (engine/validators/), per archived or result image.
    """CREATE TABLE IF NOT EXISTS validity (
        campaign_id VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,            -- archive | result
        ref INTEGER NOT NULL,             -- archive entry, or seed_idx for a result
        validator VARCHAR NOT NULL,
        score DOUBLE NOT NULL,
        threshold DOUBLE NOT NULL,
        valid BOOLEAN NOT NULL,           -- score >= threshold
        calibrated_on VARCHAR,            -- the validity study the threshold was fitted on
        PRIMARY KEY (campaign_id, kind, ref, validator)
    )""",
    # Schema 7 (issue 11): tags and notes of a campaign or a study, kept apart from the
    # records themselves so that editing them never touches finished rows (CONTRACT.md).
    """CREATE TABLE IF NOT EXISTS annotations (
        kind VARCHAR NOT NULL,            -- campaign | study
        id VARCHAR NOT NULL,
        tags VARCHAR[] NOT NULL,
        notes VARCHAR NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        PRIMARY KEY (kind, id)
    )""",
    # Schema 9 (issue 16): a grid's cell per campaign (engine/studies/grid.py), written in the same
    # transaction as the cell's rows: a cell is done exactly when its campaign is in.
    """CREATE TABLE IF NOT EXISTS grid_cells (
        campaign_id VARCHAR NOT NULL PRIMARY KEY,
        grid VARCHAR NOT NULL,            -- the grid's name (also the campaigns' study)
        cell VARCHAR NOT NULL,            -- stable id derived from the cell's values
        axes JSON NOT NULL                -- {axis: value}, in the grid's axis order
    )""",
    # Schema 12 (issue 37): validity filters' scores of a validity study's images, which
    # engine/labelling/study_calibration.py calibrates against people's verdicts.
    """CREATE TABLE IF NOT EXISTS study_scores (
        study_id VARCHAR NOT NULL,
        item_id INTEGER NOT NULL,
        validator VARCHAR NOT NULL,
        score DOUBLE NOT NULL,            -- higher is more valid
        preserves DOUBLE,                 -- label-preservation score, where it has one
        scored_at TIMESTAMP NOT NULL,
        PRIMARY KEY (study_id, item_id, validator)
    )""",
]


#: The key of every campaign table: no two rows share one (schema 4 on).
KEYS: dict[str, str] = {
    "campaigns": "id",
    "seeds": "campaign_id, seed_idx",
    "generations": "campaign_id, seed_idx, generation",
    "individuals": "campaign_id, seed_idx, generation, individual",
    "images": "campaign_id, seed_idx, kind",
    "archive": "campaign_id, entry",
}


#: Keys no index enforces. A campaign writes a row per individual per generation (25 per
#: seed searched), and DuckDB's index on them doubled every flush's time and
#: tripled the file. The writer keeps the key: each generation's rows are appended once,
#: in one transaction, and a failed flush rolls back whole; `latentfuzz doctor` checks it.
UNINDEXED = {"individuals"}


#: The store's own catalog: writes attach the file beside others (store/host.py).
HERE = "database_name = current_database()"


def own_tables(con) -> set[str]:
    sql = f"SELECT table_name FROM duckdb_tables() WHERE {HERE}"
    return {r[0] for r in con.execute(sql).fetchall()}


def keyed_tables(con) -> set[str]:
    sql = (
        f"SELECT table_name FROM duckdb_constraints() WHERE {HERE} "
        "AND constraint_type = 'PRIMARY KEY'"
    )
    return {r[0] for r in con.execute(sql).fetchall()}


def add_keys(con) -> None:
    """Give every existing campaign table its primary key (but UNINDEXED). Stores written
    before schema 4 may hold duplicates (a reused campaign id): the first row of each key
    is kept, as a reader saw it first. Tables that do not exist yet are created with their
    key by DDL."""
    tables = own_tables(con)
    keyed = keyed_tables(con)
    for table, key in KEYS.items():
        if table not in tables or table in keyed:
            continue
        n, distinct = con.execute(
            f"SELECT count(*), count(DISTINCT ({key})) FROM {table}"
        ).fetchone()
        if n != distinct:
            # DuckDB still sees rows deleted in this transaction when it builds the key, so
            # the table is rebuilt from the first row of each key.
            rebuild(con, table, f"rowid IN (SELECT min(rowid) FROM {table} GROUP BY {key})")
        if table not in UNINDEXED:  # its key is the writer's to keep
            con.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({key})")


def rebuild(con, table: str, where: str = "true") -> None:
    """`table` made anew from its rows that match `where`, without its primary key (DuckDB
    cannot drop one), NOT NULL put back."""
    nn = [
        r[0]
        for r in con.execute(
            f"SELECT column_name FROM duckdb_columns() WHERE {HERE} AND table_name = ? "
            "AND NOT is_nullable",
            [table],
        ).fetchall()
    ]
    con.execute(f"CREATE TABLE {table}__new AS SELECT * FROM {table} WHERE {where}")
    con.execute(f"DROP TABLE {table}")
    con.execute(f"ALTER TABLE {table}__new RENAME TO {table}")
    for c in nn:
        con.execute(f"ALTER TABLE {table} ALTER COLUMN {c} SET NOT NULL")


def drop_unindexed_keys(con) -> None:
    """Schema 11: the tables of UNINDEXED rebuilt without their primary key."""
    for table in sorted(UNINDEXED & keyed_tables(con)):
        rebuild(con, table)


def add_column(con, table: str, column: str) -> None:
    """Add a column to a table that an older store may not have yet (DDL, which runs
    after the migrations, then creates the table with the column)."""
    tables = own_tables(con)
    if table in tables:
        con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column}")


#: A seed's status, in the words the dashboard and exports show. Until schema 7 a seed the
#: classifier got wrong was `failed`, which read as "the campaign failed", and a seed the
#: classifier got wrong from the start was `non_viable`.
SEED_STATUSES = ("non-viable", "searching", "misclassified", "survived", "interrupted")
#: Seed statuses as schema 6 and older stored them, and what they are now.
OLD_SEED_STATUSES = {"failed": "misclassified", "non_viable": "non-viable"}


def rename_seed_statuses(con) -> None:
    """Schema 7: old seed statuses in the words of SEED_STATUSES (campaign statuses,
    where `failed` means the campaign failed, stay as they are)."""
    sql = f"SELECT column_name FROM duckdb_columns() WHERE {HERE} AND table_name = 'seeds'"
    cols = {r[0] for r in con.execute(sql).fetchall()}
    if "status" in cols:  # a store too old (or too partial) to have seed statuses has none
        for old, new in OLD_SEED_STATUSES.items():
            con.execute("UPDATE seeds SET status = ? WHERE status = ?", [new, old])


#: Statements (or functions of a connection) that bring a store from version N - 1 to N,
#: applied in order on open.
MIGRATIONS: dict[int, list] = {
    2: ["ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS study VARCHAR"],
    3: [],  # labelling tables only: DDL creates them
    4: [add_keys],  # keys on the campaign tables
    5: [],  # issue 13, per-campaign metrics: DDL creates campaign_metrics
    6: [  # class-escape matrix: a target per seed, the test-set confusion beside it
        lambda con: add_column(con, "seeds", "target INTEGER"),
        lambda con: add_column(con, "campaign_metrics", "test_confusion JSON"),
    ],
    7: [rename_seed_statuses],  # issue 11: clear seed statuses; DDL adds `annotations`
    8: [  # issue 14, differential testing: a second classifier's labels, a second objective
        lambda con: add_column(con, "campaigns", "classifier_b VARCHAR"),
        lambda con: add_column(con, "seeds", "seed_pred_b INTEGER"),
        lambda con: add_column(con, "seeds", "final_pred_b INTEGER"),
        lambda con: add_column(con, "generations", "best_pred_b INTEGER"),
        lambda con: add_column(con, "individuals", "pred_b INTEGER"),
        lambda con: add_column(con, "individuals", "objective2 DOUBLE"),
        lambda con: add_column(con, "campaign_metrics", "differential JSON"),
        lambda con: add_column(con, "label_items", "predicted_b INTEGER"),
    ],  # archive and validity: DDL creates them
    9: [  # issue 16: campaigns imported from other tools' results (engine/io/import_results.py)
        lambda con: add_column(con, "campaigns", "kind VARCHAR DEFAULT 'native'"),
        lambda con: add_column(con, "seeds", "params JSON"),
    ],
    10: [],  # issue 16, grids: DDL creates grid_cells
    11: [drop_unindexed_keys],  # issue 12: individuals' rows written at half the cost
    12: [  # issue 37: the study a calibrated threshold came from; DDL adds study_scores
        lambda con: add_column(con, "validity", "calibrated_on VARCHAR"),
    ],
    13: [  # issue 37: realism per campaign (engine/campaign/realism.py)
        lambda con: add_column(con, "campaign_metrics", "realism JSON"),
    ],
}
