"""embedprobe: embed every window once, cache it in HDF5, fit a linear probe per fold."""

__version__ = "0.1.0"
