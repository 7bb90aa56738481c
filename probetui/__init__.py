"""probetui shows what the kubelet's prober is thinking, live."""

__version__ = "0.1.0"
