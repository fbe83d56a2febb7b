"""Example systems that live outside the fencecheck package and plug into it (docs/plugins-from-your-package.md)."""
