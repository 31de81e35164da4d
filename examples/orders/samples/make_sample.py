"""How ``orders.parquet`` was made: a stand-in for records exported from the production
``orders`` topic (``key``, ``value``, ``headers`` columns, as a run's own ``topic.parquet``
keeps them) — 60 orders, a few of them busy, each created, revised and shipped, a few
cancelled (a tombstone), and two values from a producer on schema id 2 the job rejects.

Run it from the example's folder, the project installed (``pip install -e .``) or on the path:
``PYTHONPATH=. python samples/make_sample.py`` (it writes the same file, byte for byte).
"""

import datetime as dt
import decimal
import io
import random
import struct
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from orders_job.schema import ORDER, SCHEMA_ID

PARSED = fastavro.parse_schema(ORDER)
START = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)


def wire(order: dict, schema_id: int = SCHEMA_ID) -> bytes:
    """An order as the checkout service writes it: the wire header, then the Avro body."""
    out = io.BytesIO()
    out.write(b"\x00" + struct.pack(">I", schema_id))
    fastavro.schemaless_writer(out, PARSED, order)
    return out.getvalue()


def main() -> None:
    rng = random.Random(2026)
    weights = [1 / (rank + 1) for rank in range(60)]  # a few busy orders, many quiet ones
    revision: dict[int, int] = {}
    rows = []
    for n in range(400):
        order = rng.choices(range(60), weights)[0]
        key = f"order-{1000 + order}".encode()
        headers = [{"name": "source", "value": b"checkout"}]
        if rng.random() < 0.05:  # cancelled
            rows.append({"key": key, "value": None, "headers": headers})
            revision.pop(order, None)
            continue
        revision[order] = revision.get(order, 0) + 1
        cents = decimal.Decimal(rng.randrange(100, 10**7)).scaleb(-2)
        doc = {
            "customer": f"customer-{rng.randrange(500)}",
            "amount": cents.quantize(decimal.Decimal("0.0001")),
            "placed": START + dt.timedelta(seconds=7 * n, milliseconds=rng.randrange(1000)),
            "note": rng.choice([None, None, "gift wrap", "leave at the door", "déjà vu"]),
            "revision": revision[order],
        }
        schema_id = 2 if n in (97, 311) else SCHEMA_ID  # a producer a version ahead
        rows.append({"key": key, "value": wire(doc, schema_id), "headers": headers})
    header = pa.list_(pa.struct([("name", pa.string()), ("value", pa.binary())]))
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("headers", header)])
    pq.write_table(pa.Table.from_pylist(rows, schema), Path(__file__).with_name("orders.parquet"))


if __name__ == "__main__":
    main()
