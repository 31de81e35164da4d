"""The ceiling of ``bench/sut_compare.py``: a bare confluent-kafka consumer reading a topic from
offset 0 to a given log end, doing nothing with the records but touching their keys and values.
``--conf`` adds librdkafka settings: ``bench/sut_compare.py`` passes the harness's topic dump's
fetch sizes (``sealcheck.infra.topic.FETCH``, 16 MiB per partition), since with librdkafka's
1 MiB default the same consumer is 3.4x slower (``bench/topic_dump.py``) and a ceiling should
be the fastest bare reader, not a handicapped one. (Passed in, not imported: importing
``sealcheck`` would add its start-up and memory to the ceiling's.)

    python bench/raw_consumer.py --bootstrap HOST:PORT --topic T --ends '{"0": 123, ...}'
        [--step 20000] [--conf '{"max.partition.fetch.bytes": 16777216}']

Run as its own process (so its start-up and its RSS are measured like a system under test's).
Prints one JSON line: ``records`` read, and ``CLOCK_MONOTONIC`` seconds (comparable with the
parent's ``time.monotonic()``) at ``ready`` (imports done, consumer made), at the end of every
``step`` records (``steps``), and at the ``end``; and its own peak RSS (``VmHWM``: exact,
where sampling would miss most of a run this short).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from measure import vm_hwm


def read_to_end(
    bootstrap: str, topic: str, ends: dict[int, int], step: int, conf: dict[str, Any]
) -> dict[str, object]:
    """Read ``[0, ends[p])`` of every partition with ``conf`` added to the consumer's settings;
    the times described in the module docstring."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "sealcheck-raw-ceiling",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **conf,
        }
    )
    ready = time.monotonic()
    remaining = {p: e for p, e in ends.items() if e > 0}
    consumer.assign([TopicPartition(topic, p, 0) for p in remaining])
    records, payload, steps = 0, 0, []
    nxt: dict[int, int] = {}
    try:
        while remaining:
            # never more than what is left: consume() waits for its count or the timeout
            left = sum(e - nxt.get(p, 0) for p, e in remaining.items())
            for msg in consumer.consume(max(1, min(10_000, left)), timeout=0.5):
                if msg.error() is not None:
                    raise RuntimeError(f"reading {topic!r}: {msg.error()}")
                p, o = msg.partition(), msg.offset()
                assert p is not None and o is not None
                if p not in remaining or o >= remaining[p]:
                    continue  # past the log end we were given
                key, value = msg.key(), msg.value()
                payload += (len(key) if key else 0) + (len(value) if value else 0)
                records += 1
                nxt[p] = o + 1
                if records % step == 0:
                    steps.append(time.monotonic())
                if o + 1 >= remaining[p]:
                    del remaining[p]
    finally:
        consumer.close()
    end = time.monotonic()
    peak = vm_hwm()
    return {
        "records": records,
        "bytes": payload,
        "ready": ready,
        "steps": steps,
        "end": end,
        "peak_rss_bytes": peak,
    }


def main() -> None:
    """Read the topic and print the JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--ends", required=True, help="JSON {partition: log end}")
    ap.add_argument("--step", type=int, default=20_000)
    ap.add_argument("--conf", default="{}", help="JSON {librdkafka setting: value}")
    args = ap.parse_args()
    ends = {int(p): int(o) for p, o in json.loads(args.ends).items()}
    got = read_to_end(args.bootstrap, args.topic, ends, args.step, json.loads(args.conf))
    print(json.dumps(got), flush=True)


if __name__ == "__main__":
    main()
