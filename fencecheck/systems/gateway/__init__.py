"""The gateway journal's plug-in (`plugin`), its parallel programs (`parallel`) and its structural invariants
(`structure`). One folder, so the gateway is read in one place.
"""
