"""A compare-and-set register, verified by fencecheck from outside its package (README.md here)."""
