"""Pictures: HTML reports."""
