"""The store's tables (docs/architecture.md#store-schema): the schema a new
store is created with, the columns added since (an old store gets them on
open), and what makes an SQLite file an isobench store rather than someone
else's database."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    study_name TEXT NOT NULL,
    study_path TEXT NOT NULL,
    study_text TEXT NOT NULL,
    study_hash TEXT NOT NULL,
    baseline TEXT NOT NULL,
    environments TEXT NOT NULL,          -- JSON list, study order
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,                -- running | complete | incomplete | interrupted | failed
    host_facts TEXT NOT NULL             -- JSON
);
CREATE TABLE IF NOT EXISTS env_facts (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    env TEXT NOT NULL,
    facts TEXT NOT NULL,                 -- JSON
    PRIMARY KEY (run_id, env)
);
CREATE TABLE IF NOT EXISTS metric_defs (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    workload TEXT NOT NULL,
    ccase TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    higher_is_better INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    role TEXT NOT NULL DEFAULT '',       -- isobench.core.metric role; '' in runs stored before roles
    is_primary INTEGER NOT NULL DEFAULT 0, -- 1: a primary of its case; 0 everywhere in runs before primaries
    PRIMARY KEY (run_id, workload, ccase, metric)
);
CREATE TABLE IF NOT EXISTS samples (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    env TEXT NOT NULL,
    workload TEXT NOT NULL,
    ccase TEXT NOT NULL,
    round INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    status TEXT NOT NULL,                -- ok | failed | timeout
    error TEXT,
    vals TEXT NOT NULL,                  -- JSON {metric: value}
    extra TEXT NOT NULL,                 -- JSON detail (histograms ...)
    raw TEXT NOT NULL,                   -- the tool's output
    started_at TEXT NOT NULL,
    wall_s REAL NOT NULL,
    parser_version INTEGER               -- the workload's parser that made vals; NULL: not recorded (stored before)
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id);
CREATE TABLE IF NOT EXISTS fleet_hosts (   -- isobench/fleet/record.py
    fleet_id TEXT NOT NULL,
    host TEXT NOT NULL,                  -- inventory name
    run_id TEXT NOT NULL,                -- chosen by the controller
    status TEXT NOT NULL,                -- pending | complete | failed | unreachable
    detail TEXT NOT NULL DEFAULT '',     -- one line: why not complete
    study_path TEXT NOT NULL,
    inventory TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (fleet_id, host)
);
"""


# Columns added since the first schema: (table, column, definition). A store
# created before them gets them on open, so old stores keep working.
ADDED_COLUMNS = (
    ("metric_defs", "role", "TEXT NOT NULL DEFAULT ''"),
    ("samples", "parser_version", "INTEGER"),
    ("metric_defs", "is_primary", "INTEGER NOT NULL DEFAULT 0"),
)


# The tables an isobench store holds and the columns its runs table has had
# from the first schema: a file with anything else is someone else's.
OWN_TABLES = frozenset(
    {"runs", "env_facts", "metric_defs", "samples", "fleet_hosts", "sqlite_sequence", "isobench_probe"}
)
RUNS_COLUMNS = frozenset({"run_id", "study_name", "study_hash", "environments", "host_facts", "status"})
