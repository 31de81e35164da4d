"""A tiny job for the integration tests: a confluent-kafka consumer that upserts every record of
a topic into a SQLite table ``accounts (id TEXT PRIMARY KEY, v TEXT)`` — its key as the row's
key, its value as text — deletes on a tombstone, and keeps its offsets in the same transaction
(so a restart resumes exactly), saying ``batch N committed`` after each. It stores a record
without a key too, under a NULL key (SQLite allows NULL in a TEXT PRIMARY KEY): the bug the
harness must tell in one line.

Usage: ``python tiny_sqlite_job.py BOOTSTRAP TOPIC DB [--upper] [--fail-after N]
[--from-latest] [--size | --size-on-insert]``: with ``--upper`` it stores values upper-cased (a
state no prefix explains: INVALID); with ``--fail-after N`` it raises once it has stored N
records, and at every start after that; with ``--from-latest`` it ignores the offsets it stored
and starts at the log's end (an upgrade's classic mistake: a new checkpoint and
``startingOffsets=latest``); with ``--size`` (a release 2) it adds a column ``size`` (the
value's length) to the table once and writes it; ``--size-on-insert`` writes it only when it
inserts a row, not when it updates one (a release 2's mistake).
"""

from __future__ import annotations

import argparse
import sqlite3

from confluent_kafka import OFFSET_END, Consumer, TopicPartition


def main(
    bootstrap: str,
    topic: str,
    path: str,
    upper: bool,
    fail_after: int | None,
    from_latest: bool = False,
    size: str = "",
) -> None:
    """Consume ``topic`` from the offsets stored in ``path`` on, committing each poll's
    records as one transaction."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS accounts (id TEXT PRIMARY KEY, v TEXT)")
    db.execute("CREATE TABLE IF NOT EXISTS offsets (p INTEGER PRIMARY KEY, next INTEGER)")
    start = dict(db.execute("SELECT p, next FROM offsets").fetchall())
    upsert = "INSERT INTO accounts (id, v) VALUES (?1, ?2) ON CONFLICT(id) DO UPDATE SET v = ?2"
    if size:  # release 2: the column, once, and its value
        if "size" not in {row[1] for row in db.execute("PRAGMA table_info(accounts)")}:
            db.execute("ALTER TABLE accounts ADD COLUMN size INTEGER")
        upsert = (
            "INSERT INTO accounts (id, v, size) VALUES (?1, ?2, length(?2)) "
            "ON CONFLICT(id) DO UPDATE SET v = ?2"
            + (", size = length(?2)" if size == "always" else "")
        )
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "tiny", "enable.auto.commit": False}
    )
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    at = {p: OFFSET_END if from_latest else start.get(p, 0) for p in parts}
    consumer.assign([TopicPartition(topic, p, at[p]) for p in parts])
    stored, batches = sum(start.values()), 0
    while True:
        if fail_after is not None and stored >= fail_after:
            raise RuntimeError(f"poison: the job cannot go past {stored} records")
        batch = [m for m in consumer.consume(200, timeout=0.2) if m.error() is None]
        if not batch:
            continue
        db.execute("BEGIN")
        for m in batch:
            key = m.key().decode("utf-8", "replace") if m.key() is not None else None
            value = m.value()
            if value is None:
                db.execute("DELETE FROM accounts WHERE id = ?", (key,))
            else:
                text = value.decode("utf-8", "replace")
                text = text.upper() if upper else text
                db.execute(upsert, (key, text))
            db.execute(
                "INSERT OR REPLACE INTO offsets VALUES (?, ?)", (m.partition(), m.offset() + 1)
            )
        db.execute("COMMIT")
        stored += len(batch)
        batches += 1
        print(f"batch {batches} committed", flush=True)  # a crash window's opening (its log)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "db"):
        parser.add_argument(name)
    parser.add_argument("--upper", action="store_true")
    parser.add_argument("--fail-after", type=int, default=None)
    parser.add_argument("--from-latest", action="store_true")
    parser.add_argument("--size", action="store_const", const="always", default="")
    parser.add_argument("--size-on-insert", dest="size", action="store_const", const="insert")
    args = parser.parse_args()
    main(
        args.bootstrap,
        args.topic,
        args.db,
        args.upper,
        args.fail_after,
        args.from_latest,
        args.size,
    )
