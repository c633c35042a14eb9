"""Compiled building blocks: the spinlock for the locked baseline and the
compiler that turns a user's plain per-sample functions into cached epoch loops."""
