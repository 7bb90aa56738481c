"""The stream between the engine and whoever shows or keeps what it does (docs/stream.md).

One vocabulary, the JSONL events `--output jsonl` prints, carried as newline-delimited JSON
frames: `protocol.py` frames, versions and checks; `codec.py` turns the engine's `Event`s and
pod snapshots into frames and back, losslessly for what the UI's store and the recorder read.
The shard processes (`probetui.shards`) speak it to the UI process today; a remote agent can
serve the same frames over a socket.
"""
