"""The lantern transaction layer's plug-in (`plugin`) and its parallel programs (`parallel`). One folder, so the
lantern is read in one place.
"""
