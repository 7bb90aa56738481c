"""Runtimes play the kubelet and the container runtime for the prober.

`local` runs a Pod's containers as local processes.
"""
