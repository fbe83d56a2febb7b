"""The Firestore emulator and the clients on it.

Finding an emulator (`discovery`), starting and stopping one (`lifecycle`), reading and writing documents
(`firestore_io`). One room owns the outside world's Firestore, so runners and suites take a client from here and
know nothing of how the emulator was found or started.
"""
