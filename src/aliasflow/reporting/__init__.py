"""Reporting findings the way checkers do: severities and kinds, selection, inline
suppression, ``[tool.aliasflow]`` settings, and JSON, text, SARIF, GitHub and HTML output.

The tracers produce findings; :func:`.adapter.item_from_finding` is the one place that reads
them. Program-file commands make items with :func:`.programs.dependency_item`.
"""
from .items import KINDS, SEVERITIES, Item, Place
from .policy import NEVER, Policy, UsageError
from .report import SCHEMA_VERSION, Report

__all__ = ["KINDS", "SEVERITIES", "Item", "Place", "NEVER", "Policy", "UsageError",
           "SCHEMA_VERSION", "Report"]
