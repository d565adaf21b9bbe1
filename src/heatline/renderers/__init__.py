"""Renderers turn a profile dict (docs/profile-format.md) into something to read."""
