"""Merge probetui's configuration: the config files, the environment and the flags.

One module a job: `files.py` (where the files are, reading one), `schema.py` (the versioned
schema and its validation), `keymap.py` (binding ids and keys), `resolve.py` (what is in force
and where it came from, read-only's lock), `template.py` (`probetui config --init`'s file).
What the settings do is the caller's: the cluster view installs the read-only guard when
`Config.read_only` says so; configuration itself only decides.
"""

from probetui.config.errors import ConfigError
from probetui.config.files import ConfigFile
from probetui.config.resolve import IN_CLUSTER, ClusterKin, Config, Sourced, load, shell_lock
from probetui.config.schema import VERSION

__all__ = [
    "IN_CLUSTER",
    "VERSION",
    "ClusterKin",
    "Config",
    "ConfigError",
    "ConfigFile",
    "Sourced",
    "load",
    "shell_lock",
]
