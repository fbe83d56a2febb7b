"""fencecheck: verification harness for a fenced Firestore command journal."""

__version__ = "0.1.0"
