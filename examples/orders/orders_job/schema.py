"""The ``orders`` topic's value schema: what the checkout service writes, registered under
schema id 1 (Confluent's wire format: a zero byte, the id in 4 bytes, then the Avro body)."""

import json

SCHEMA_ID = 1

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "customer", "type": "string"},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 4},
        },
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "revision", "type": "long"},
    ],
}

#: the schema as ``from_avro`` takes it
ORDER_JSON = json.dumps(ORDER)
