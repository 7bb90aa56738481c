"""Stream what the engine does to whoever shows or keeps it (docs/stream.md).

One vocabulary, the JSONL events `--output jsonl` prints, carried as newline-delimited JSON
frames: `protocol.py` frames, versions and checks; `codec.py` turns the engine's `Event`s and
pod snapshots into frames and back, losslessly for what the UI's store and the recorder read;
`rows.py` the compact form of the shadow's attempts (a few numbers each, many to a frame) that a
client asks for in its hello; `sender.py` the engine's writer (one write per turn of its loop,
drops counted for a slow reader); `reader.py` the client's line splitter.
The shard processes (`probetui.shards`) speak it to the UI process today; a remote agent can
serve the same frames over a socket.
"""
