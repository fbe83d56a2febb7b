"""Test doubles shared by the unit suites (no network, no emulator)."""

from .fake_firestore import FakeDocumentReference, FakeFirestore, FakeFirestoreMisuse, FakeSnapshot, FakeTransaction

__all__ = ["FakeDocumentReference", "FakeFirestore", "FakeFirestoreMisuse", "FakeSnapshot", "FakeTransaction"]
