"""Known-bad variants: deliberately broken copies of the reference, to prove the checks catch real bugs.

Each variant is an isolated copy of a reference package (`known_bad.loader.load_reference_copy`) with one
function rewritten to carry one small, commented bug (`known_bad.loader.mutate`). The real `reference`
package is never modified, and it never imports anything from here.

    from known_bad.journal import VARIANTS, system
    api = system("expiry-equality-active")        # a fencecheck.runners.lockstep.ReferenceAPI
"""
