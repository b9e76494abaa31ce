"""DuckDB schema. Bump SCHEMA_VERSION with every change and add a migration in connection.py."""

from __future__ import annotations

SCHEMA_VERSION = 2

DDL = [
    """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS campaigns (
        id VARCHAR NOT NULL,
        name VARCHAR,
        status VARCHAR NOT NULL,          -- running | finished | interrupted | failed
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
        study VARCHAR                     -- the study this campaign belongs to, if any
    )""",
    """CREATE TABLE IF NOT EXISTS seeds (
        campaign_id VARCHAR NOT NULL,
        seed_idx INTEGER NOT NULL,
        source_index INTEGER,             -- dataset test index, -1 when sampled
        seed_label INTEGER NOT NULL,      -- intended (expected) label
        seed_pred INTEGER NOT NULL,       -- classifier's label for the seed image
        seed_margin DOUBLE NOT NULL,
        viable BOOLEAN NOT NULL,
        -- non_viable | searching | failed | survived | interrupted
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
        elapsed_s DOUBLE
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
        image_frame INTEGER               -- ... and this generation's frame in it (0-based)
    )""",
    """CREATE TABLE IF NOT EXISTS individuals (
        campaign_id VARCHAR NOT NULL,
        seed_idx INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        individual INTEGER NOT NULL,      -- slot in the population
        fitness DOUBLE NOT NULL,
        pred INTEGER NOT NULL,
        evaluated BOOLEAN NOT NULL        -- false for survivors carried with their score
    )""",
    """CREATE TABLE IF NOT EXISTS images (
        campaign_id VARCHAR NOT NULL,
        seed_idx INTEGER NOT NULL,
        kind VARCHAR NOT NULL,            -- seed | result
        path VARCHAR NOT NULL             -- relative to the home
    )""",
]


#: Statements that bring a store from version N - 1 to N, applied in order on open.
MIGRATIONS: dict[int, list[str]] = {
    2: ["ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS study VARCHAR"],
}
