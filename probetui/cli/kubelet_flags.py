"""`--kubelet-version` and `--feature-gates` choose which kubelet `simulate` and `lint` play."""

from __future__ import annotations

import argparse

from probetui.cli.errors import UsageError
from probetui.kubelet.profile import (
    DEFAULT_VERSION,
    GATES,
    KubeletProfile,
    ProfileError,
    parse_feature_gates,
    profile_for,
    supported_versions,
)


def add_arguments(group: argparse._ActionsContainer) -> None:
    """The two flags, with help, on a parser or an argument group."""
    group.add_argument(
        "--kubelet-version",
        metavar="1.MINOR",
        default=DEFAULT_VERSION,
        help=f"the kubelet release to play, {supported_versions()[0]} to "
        f"{supported_versions()[-1]}, with that release's feature-gate defaults "
        f"(default {DEFAULT_VERSION}; docs/kubelet-versions.md lists what changes)",
    )
    group.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        default="",
        help="feature gates set away from the release's defaults, as the kubelet's own flag "
        f"takes them, e.g. GRPCContainerProbeTLS=true (modelled: {', '.join(sorted(GATES))})",
    )


def profile_from(args: argparse.Namespace) -> KubeletProfile:
    """Return the profile the flags name; a bad version or gate is one line, exit 2."""
    try:
        return profile_for(args.kubelet_version, parse_feature_gates(args.feature_gates))
    except ProfileError as e:
        raise UsageError(str(e)) from None
