"""Finding kernels by reading source with ``ast``; a kernel is never imported here."""
