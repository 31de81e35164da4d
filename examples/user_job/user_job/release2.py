"""Release 2 of the job (``--release 2``), for its Delta and SQLite sinks: it adds a column,
``tier`` (``odd`` or ``even``, from the record's ``i``), to ``accounts`` — an ``ALTER TABLE`` at
start, as teams ship it — and resumes release 1's checkpoint and tables.

Three mistakes teams make when shipping such a release, as ``--variant``:

* ``v2-fresh-checkpoint``: release 2 gets a checkpoint directory of its own and
  ``startingOffsets=latest`` ("a clean start"): what release 1 had not read yet is never read;
* ``v2-delete-needs-tier``: its delete also matches on the new column (``tier IS NOT NULL``; in
  the Delta MERGE, the ``WHEN MATCHED … THEN DELETE`` clause's condition), which every row
  release 1 wrote holds as NULL: those rows are never deleted;
* ``v2-normalised-keys``: it upper-cases the key (``K17``), so release 1's rows are never
  updated or deleted again and each key is written twice;
* ``v2-tier-on-insert-only``: ``tier`` is in its INSERT but was forgotten in its UPDATE SET, so
  a row release 1 wrote keeps ``tier`` NULL however often release 2 updates it.
"""

from __future__ import annotations

from typing import Any

from user_job.job import WriteBatch, WriteBatchToSQLite

#: release 2's upsert: release 1's, and the tier from ``i`` (?2)
UPSERT = """
INSERT INTO accounts (id, i, w, p, batch_id, updated_at, tier)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, CASE WHEN ?2 % 2 = 0 THEN 'even' ELSE 'odd' END)
ON CONFLICT (id) DO UPDATE SET i = excluded.i, w = excluded.w, p = excluded.p,
  batch_id = excluded.batch_id, updated_at = excluded.updated_at, tier = excluded.tier
"""
#: release 2's MERGE into Delta: release 1's, and the tier from ``i``
MERGE = """
MERGE INTO delta.`{path}` t
USING (SELECT *, CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END AS tier FROM latest) s
ON t.id = s.id
WHEN MATCHED AND s.deleted THEN DELETE
WHEN MATCHED AND NOT s.deleted THEN UPDATE SET
  i = s.i, w = s.w, p = s.p, batch_id = s.batch_id, updated_at = s.at, tier = s.tier
WHEN NOT MATCHED AND NOT s.deleted THEN INSERT (id, i, w, p, batch_id, updated_at, tier)
  VALUES (s.id, s.i, s.w, s.p, s.batch_id, s.at, s.tier)
"""
#: its variants' mistakes, as ``--variant`` names them
MISTAKES = (
    "v2-fresh-checkpoint",
    "v2-delete-needs-tier",
    "v2-normalised-keys",
    "v2-tier-on-insert-only",
)


class WriteBatchToSQLiteV2(WriteBatchToSQLite):
    """Release 2 of :class:`WriteBatchToSQLite`: the same batches, with ``tier``."""

    upsert = UPSERT

    def __init__(self, root: str, variant: str | None, app: str = "") -> None:
        super().__init__(root, variant, app)
        if variant == "v2-delete-needs-tier":
            self.delete = "DELETE FROM accounts WHERE id = ? AND tier IS NOT NULL"
        if variant == "v2-normalised-keys":
            self.upsert = UPSERT.replace("VALUES (?1,", "VALUES (upper(?1),")
            self.delete = "DELETE FROM accounts WHERE id = upper(?)"
        if variant == "v2-tier-on-insert-only":
            self.upsert = UPSERT.replace(", tier = excluded.tier", "")

    def connect(self, root: str) -> Any:
        """Release 1's tables, and ``tier`` added to ``accounts`` once."""
        db = super().connect(root)
        columns = {row[1] for row in db.execute("PRAGMA table_info(accounts)")}
        if "tier" not in columns:
            db.execute("ALTER TABLE accounts ADD COLUMN tier TEXT")
            db.commit()
        return db


class WriteBatchV2(WriteBatch):
    """Release 2 of :class:`~user_job.job.WriteBatch`: the same MERGE into Delta, with
    ``tier``; release 1's mistakes (``--variant``) carried over, as the SQLite sink's are."""

    def __init__(self, root: str, variant: str | None) -> None:
        super().__init__(root, variant)
        if self.as_documented:  # release 1's mistake, kept as it was (no tier)
            return
        self.upsert = MERGE.format(path=self.accounts)
        if variant == "keeps-deleted-rows":  # release 1's mistake, kept
            self.upsert = self.upsert.replace("WHEN MATCHED AND s.deleted THEN DELETE\n", "")
        if variant == "v2-delete-needs-tier":
            clause = "s.deleted THEN DELETE"
            self.upsert = self.upsert.replace(
                clause, "s.deleted AND t.tier IS NOT NULL THEN DELETE"
            )
        if variant == "v2-normalised-keys":
            upper = self.upsert.replace("ON t.id = s.id", "ON t.id = upper(s.id)")
            self.upsert = upper.replace("VALUES (s.id,", "VALUES (upper(s.id),")
        if variant == "v2-tier-on-insert-only":
            self.upsert = self.upsert.replace(", tier = s.tier", "")

    def prepare(self, spark: Any) -> None:
        """Release 1's table, and ``tier`` added to ``accounts`` once."""
        table = f"delta.`{self.accounts}`"
        if self.as_documented:  # release 1's documented MERGE (UPDATE SET *): its columns only
            return
        if "tier" not in spark.table(table).columns:
            spark.sql(f"ALTER TABLE {table} ADD COLUMNS (tier STRING)")


def checkpoint(root: str, variant: str | None) -> tuple[str, str]:
    """Release 2's checkpoint directory and starting offsets: release 1's (it resumes them),
    except for ``v2-fresh-checkpoint``."""
    if variant == "v2-fresh-checkpoint":
        return f"{root}/checkpoint-v2", "latest"
    return f"{root}/checkpoint", "earliest"
