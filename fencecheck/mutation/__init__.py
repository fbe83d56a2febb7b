"""`fencecheck mutate`: how strong the suites are, measured by mutating a system's reference and judging each
mutant by the one definition of caught (fencecheck.checker.known_bad_verdict).

- `mutants`: the mutants of the files a plug-in names (`SystemPlugin.mutation`), found and applied by cosmic-ray,
  each written out as an importable copy of the reference package;
- `outcomes`: each mutant's result, one JSON line per mutant, so a run can be split into shards and resumed;
- `stryker`: the report in Stryker's mutation-testing-report-schema.

Running the suites against a mutant is the command's (fencecheck.cli.mutate): nothing here starts a process.
"""
