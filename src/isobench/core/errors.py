"""Errors every floor may raise; str() is always the one-line message a user sees."""

from __future__ import annotations


class IsobenchError(RuntimeError):
    """A known failure: its text names the file, field or resource and the fix."""


class EnvironmentError_(IsobenchError):
    """An environment (or what it needs: engine, image, guest) could not be started or used."""
