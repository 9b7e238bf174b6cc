"""The worker's wire: how the plain data of exporter/types.py and exporter/events.py crosses the
pipes between the server, the zygote and a job's child. Torch-free: the server imports it.

    plain.py     plain data: `Plain.to_dict`, and `decode`, the one decoder of a dataclass from
                 a dict by its fields' type hints (also the JSON output's dicts)
    frames.py    the contract: a dataclass per frame (one `encode`), the channels that decode
                 them, payloads (events, results) the zygote relays unread
    protocol.py  the framing (length + msgpack), its readers and writers, PROTOCOL_VERSION

docs/process-model.md lists the frames (tests/worker/test_frames.py checks it against frames.py).
"""
