"""The package as users install it: the wheel, and the pre-commit hook."""
