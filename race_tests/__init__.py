"""Concurrent race suite: every concurrent scenario of seeds 000 and 001 on the Firestore emulator."""
