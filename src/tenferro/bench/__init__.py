"""Benchmarks measured side by side with numpy / opt_einsum, printed as ratios."""
